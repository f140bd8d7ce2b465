# Run by TestServeClients (clients_test.go): psycopg 3 against dpsql serve, as a Python user
# would, with psycopg's defaults (extended protocol, a transaction opened by BEGIN).
# argv: host port user password. Prints one line per check.
import sys

import psycopg

host, port, user, password = sys.argv[1:5]
notices = []
with psycopg.connect(host=host, port=port, user=user, password=password, dbname="shop") as conn:
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    with conn.cursor() as cur:
        cur.execute("SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-5, kappa=1) "
                    "shop, ANON_COUNT(*) AS n FROM visits GROUP BY shop ORDER BY shop")
        print("columns", [d.name for d in cur.description])
        print("rows", cur.fetchall())
        cur.execute("SELECT WITH ANONYMIZATION OPTIONS(epsilon=%s, delta=1e-5, kappa=1) "
                    "ANON_COUNT(*) AS n FROM visits WHERE shop = %s", (1e20, "shop1"))
        print("parameters", cur.fetchall())
        try:
            cur.execute("SELECT * FROM visits")
            print("raw read answered")
        except psycopg.Error as e:
            print("raw read refused", e.sqlstate)
    conn.rollback()
    with conn.cursor() as cur:
        cur.execute("SELECT table_name FROM information_schema.tables ORDER BY 1")
        print("tables", cur.fetchall())
# Each anonymized query's first notice is its charge (others say what a group needs).
charged = [n for n in notices if n.startswith("charged")]
print("notices", len(charged), bool(notices) and notices[0].startswith("charged"))
