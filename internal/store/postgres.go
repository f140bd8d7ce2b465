package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/sqlerr"
)

// On PostgreSQL the budget is guarded by the database's roles, not only by dpsql: the owner
// (the role that owns the dpsql schema) holds every right on dpsql's tables; the engine role a
// dpsql process uses to answer analysts holds SELECT on the policy tables and EXECUTE on
// dpsql.spend, nothing else. dpsql.spend is the only way that role can change the budget, and
// it can only add to what is spent. See docs/postgres.md for the role set-up.

// SpendSignature is the PostgreSQL signature of the spend function of sessions without an
// account, as GRANT names it.
const SpendSignature = "dpsql.spend(DOUBLE PRECISION, DOUBLE PRECISION, TEXT)"

// SpendAnalystSignature is the signature of the spend function of analysts' accounts, which
// checks and updates the account's allowance with the budget.
const SpendAnalystSignature = "dpsql.spend(DOUBLE PRECISION, DOUBLE PRECISION, TEXT, TEXT)"

// fitsSignature is the signature of the helper that mirrors ledger's tolerance rule.
const fitsSignature = "dpsql.fits(DOUBLE PRECISION, DOUBLE PRECISION, DOUBLE PRECISION)"

// fitsBody is ledger.fits in PL/pgSQL: spent+cost <= total, allowing ledger.Tolerance (4) units
// in the last place of total for float rounding; a zero cost always fits, a positive one
// never when nothing is left (spent >= total) nor when adding it leaves spent unchanged (a
// cost too small to be recorded; the ledger's refusal then names the smallest that is). The unit in the last
// place of a normal total is 2^(exponent-52), found by halving and doubling (exact in double
// precision); below the smallest normal number it is the smallest subnormal. NaN compares
// greater than everything in PostgreSQL (and equal to itself), so it is refused explicitly,
// as Go's comparisons refuse it.
const fitsBody = `
DECLARE
	used DOUBLE PRECISION;
	p DOUBLE PRECISION := 1;
BEGIN
	IF cost = 0 THEN
		RETURN TRUE;
	END IF;
	IF total = 'NaN'::DOUBLE PRECISION OR spent = 'NaN'::DOUBLE PRECISION OR cost = 'NaN'::DOUBLE PRECISION THEN
		RETURN FALSE;
	END IF;
	IF NOT spent < total THEN
		-- Nothing left: no positive cost fits, however small.
		RETURN FALSE;
	END IF;
	IF cost > 1.7976931348623157e308 - spent THEN
		-- spent + cost would overflow (PostgreSQL raises): no finite total holds it.
		RETURN FALSE;
	END IF;
	used := spent + cost;
	IF NOT used > spent THEN
		-- Too small to be recorded: adding it leaves spent unchanged.
		RETURN FALSE;
	END IF;
	IF used <= total THEN
		RETURN TRUE;
	END IF;
	IF total < 0 THEN
		RETURN FALSE;
	END IF;
	IF total < 2.2250738585072014e-308 THEN
		p := 4.9406564584124654e-324;
	ELSE
		WHILE p <= total / 2 LOOP
			p := p * 2;
		END LOOP;
		WHILE p > total LOOP
			p := p / 2;
		END LOOP;
		p := p * 2.220446049250313e-16;
	END IF;
	RETURN used - total <= 4 * p;
END
`

// spendBody is dpsql.spend with an analyst: it validates the cost (finite, non-negative
// epsilon; delta in [0, 1], as ledger.Prepare; NULL is invalid), locks the budget row, then
// (always in that order) the account's row when analyst_name is not NULL, and records the
// charge only if the budget is set and either unlimited or the cost fits what remains
// (dpsql.fits, the ledger's rule), and, for an account, the account exists and the cost fits
// its allowance (a NULL allowance does not limit). It returns whether it recorded the charge,
// and the budget and the account as they were before the charge, so that dpsql can word a
// refusal exactly as ledger.Allow does. It can only add: spent totals grow by the validated
// cost, and a charge row is appended with the server's clock and the account's name.
const spendBody = `
DECLARE
	b dpsql.budget%ROWTYPE;
	a dpsql.analysts%ROWTYPE;
BEGIN
	IF NOT COALESCE(cost_epsilon >= 0 AND cost_epsilon < 'Infinity'::DOUBLE PRECISION
			AND cost_delta >= 0 AND cost_delta <= 1, FALSE) THEN
		RAISE EXCEPTION 'invalid query cost epsilon=%, delta=%: epsilon must be finite and non-negative, delta in [0, 1]',
			cost_epsilon, cost_delta USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF query_text IS NULL THEN
		RAISE EXCEPTION 'the query text of a charge must not be NULL' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	SELECT * INTO b FROM dpsql.budget WHERE id = 1 FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'dpsql.budget has no row' USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;
	budget_set := b.is_set;
	budget_unlimited := b.unlimited;
	total_epsilon := b.total_epsilon;
	total_delta := b.total_delta;
	spent_epsilon := b.spent_epsilon;
	spent_delta := b.spent_delta;
	recorded := b.is_set AND (b.unlimited OR (dpsql.fits(b.total_epsilon, b.spent_epsilon, cost_epsilon)
		AND (dpsql.fits(b.total_delta, b.spent_delta, cost_delta)
			OR (b.spent_delta < b.total_delta AND b.spent_delta + cost_delta = b.spent_delta))));
	account_found := FALSE;
	account_spent_epsilon := 0;
	account_spent_delta := 0;
	IF analyst_name IS NOT NULL THEN
		SELECT * INTO a FROM dpsql.analysts WHERE name = analyst_name FOR UPDATE;
		account_found := FOUND;
		IF account_found THEN
			allowance_epsilon := a.allowance_epsilon;
			allowance_delta := a.allowance_delta;
			account_spent_epsilon := a.spent_epsilon;
			account_spent_delta := a.spent_delta;
			recorded := recorded
				AND (a.allowance_epsilon IS NULL OR dpsql.fits(a.allowance_epsilon, a.spent_epsilon, cost_epsilon))
				AND (a.allowance_delta IS NULL OR dpsql.fits(a.allowance_delta, a.spent_delta, cost_delta)
					OR (a.spent_delta < a.allowance_delta AND a.spent_delta + cost_delta = a.spent_delta));
		ELSE
			recorded := FALSE;
		END IF;
	END IF;
	IF recorded THEN
		UPDATE dpsql.budget SET spends = b.spends + 1,
			-- Saturating at the largest finite double (ledger.AddSpent): under an unlimited
			-- budget, charges of epsilon 1e308 neither fail on overflow nor make spent infinite.
			spent_epsilon = CASE WHEN cost_epsilon > 1.7976931348623157e308 - b.spent_epsilon
				THEN 1.7976931348623157e308 ELSE b.spent_epsilon + cost_epsilon END,
			spent_delta = b.spent_delta + cost_delta
			WHERE id = 1;
		IF account_found THEN
			UPDATE dpsql.analysts SET
				spent_epsilon = CASE WHEN cost_epsilon > 1.7976931348623157e308 - a.spent_epsilon
					THEN 1.7976931348623157e308 ELSE a.spent_epsilon + cost_epsilon END,
				spent_delta = a.spent_delta + cost_delta
				WHERE name = analyst_name;
		END IF;
		INSERT INTO dpsql.charges (id, charged_at, epsilon, delta, query, analyst)
			SELECT COALESCE(max(c.id), 0) + 1, now() AT TIME ZONE 'UTC', cost_epsilon, cost_delta, query_text, analyst_name
			FROM dpsql.charges c;
	END IF;
END
`

// spendNoAccountBody is dpsql.spend without an analyst, the function earlier versions of dpsql
// call: the one with an analyst, given NULL.
const spendNoAccountBody = `
	SELECT s.recorded, s.budget_set, s.budget_unlimited, s.total_epsilon, s.total_delta, s.spent_epsilon, s.spent_delta
	FROM dpsql.spend(cost_epsilon, cost_delta, query_text, NULL::TEXT) s
`

// pgFunctions creates (or replaces) dpsql's functions. Both run with a pinned search_path;
// dpsql.spend runs with its owner's rights (SECURITY DEFINER), so the engine role needs no
// right on the tables it writes. PostgreSQL grants EXECUTE on new functions to PUBLIC: that
// is revoked, and the owner grants it to the engine role.
var pgFunctions = []string{
	`CREATE OR REPLACE FUNCTION dpsql.fits(total DOUBLE PRECISION, spent DOUBLE PRECISION, cost DOUBLE PRECISION)
	RETURNS BOOLEAN LANGUAGE plpgsql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp AS $dpsql$` + fitsBody + `$dpsql$`,
	`CREATE OR REPLACE FUNCTION dpsql.spend(cost_epsilon DOUBLE PRECISION, cost_delta DOUBLE PRECISION, query_text TEXT,
		analyst_name TEXT,
		OUT recorded BOOLEAN, OUT budget_set BOOLEAN, OUT budget_unlimited BOOLEAN,
		OUT total_epsilon DOUBLE PRECISION, OUT total_delta DOUBLE PRECISION,
		OUT spent_epsilon DOUBLE PRECISION, OUT spent_delta DOUBLE PRECISION,
		OUT account_found BOOLEAN, OUT allowance_epsilon DOUBLE PRECISION, OUT allowance_delta DOUBLE PRECISION,
		OUT account_spent_epsilon DOUBLE PRECISION, OUT account_spent_delta DOUBLE PRECISION)
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $dpsql$` + spendBody + `$dpsql$`,
	`CREATE OR REPLACE FUNCTION dpsql.spend(cost_epsilon DOUBLE PRECISION, cost_delta DOUBLE PRECISION, query_text TEXT,
		OUT recorded BOOLEAN, OUT budget_set BOOLEAN, OUT budget_unlimited BOOLEAN,
		OUT total_epsilon DOUBLE PRECISION, OUT total_delta DOUBLE PRECISION,
		OUT spent_epsilon DOUBLE PRECISION, OUT spent_delta DOUBLE PRECISION)
	LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $dpsql$` + spendNoAccountBody + `$dpsql$`,
	`REVOKE ALL ON FUNCTION ` + fitsSignature + ` FROM PUBLIC`,
	`REVOKE ALL ON FUNCTION ` + SpendSignature + ` FROM PUBLIC`,
	`REVOKE ALL ON FUNCTION ` + SpendAnalystSignature + ` FROM PUBLIC`,
}

// writePrivileges are the table privileges only the owner may hold on dpsql's tables.
const writePrivileges = "INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER"

// pgState is what Init and the analyst's checks need to know about a PostgreSQL database.
type pgState struct {
	tables    bool     // all of dpsql's tables that analysts need exist
	limits    bool     // dpsql.limits exists
	accounts  bool     // dpsql.analysts, dpsql.policy and dpsql.charges.analyst exist
	spend     bool     // dpsql.spend exists (with SpendSignature)
	spendAcct bool     // dpsql.spend exists with SpendAnalystSignature
	current   bool     // both dpsql.spend and dpsql.fits have this version's bodies and settings
	strays    []string // roles (quoted, or PUBLIC) holding write rights on dpsql that only its owner may hold
	owner     string   // the dpsql schema's owner (quoted), "" without a schema
	canCreate bool     // the role may create schemas in the database
	isOwner   bool     // the role has the privileges of the schema's owner
	role      string   // the connected role
}

// readPGState reads the dpsql schema's state from the system catalogs, which every role can
// read (information_schema hides the tables a role has no right on).
func readPGState(ctx context.Context, q backend.Querier) (pgState, error) {
	var st pgState
	// Functions are found by name and argument types (float8 is oid 701, text 25), not with
	// to_regprocedure, which needs USAGE on the schema.
	rows, err := q.Query(ctx, `WITH f AS (
			SELECT p.proname, p.pronargs, p.prosrc, p.prosecdef, p.proconfig, p.proowner, p.proacl
			FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
			WHERE n.nspname = 'dpsql' AND (p.proname, p.proargtypes) IN
				(('spend', '701 701 25'::pg_catalog.oidvector), ('spend', '701 701 25 25'::pg_catalog.oidvector),
					('fits', '701 701 701'::pg_catalog.oidvector)))
		SELECT
			(SELECT count(*) FROM pg_catalog.pg_class c
				WHERE c.relnamespace = n.oid AND c.relkind = 'r'
					AND c.relname IN ('budget', 'charges', 'domains', 'relations')),
			EXISTS (SELECT 1 FROM f WHERE f.proname = 'spend' AND f.pronargs = 3),
			COALESCE((SELECT bool_and(f.prosrc = CASE f.pronargs WHEN 3 THEN $3 ELSE $1 END AND f.prosecdef
					AND f.proowner = n.nspowner
					AND f.proconfig = ARRAY['search_path=pg_catalog, pg_temp']
					AND NOT EXISTS (SELECT 1 FROM aclexplode(f.proacl) a WHERE a.grantee = 0)) AND count(*) = 2
				FROM f WHERE f.proname = 'spend'), FALSE)
			AND COALESCE((SELECT f.prosrc = $2 AND f.proowner = n.nspowner
					AND f.proconfig = ARRAY['search_path=pg_catalog, pg_temp']
				FROM f WHERE f.proname = 'fits'), FALSE),
			COALESCE(n.nspowner::regrole::text, ''),
			COALESCE(pg_catalog.pg_has_role(n.nspowner, 'USAGE'), FALSE),
			pg_catalog.has_database_privilege(current_database(), 'CREATE'),
			current_user::text,
			EXISTS (SELECT 1 FROM pg_catalog.pg_class c
				WHERE c.relnamespace = n.oid AND c.relkind = 'r' AND c.relname = 'limits'),
			EXISTS (SELECT 1 FROM f WHERE f.proname = 'spend' AND f.pronargs = 4)
		FROM (SELECT 1) one LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = 'dpsql'`, spendBody, fitsBody, spendNoAccountBody)
	if err != nil {
		return st, fmt.Errorf("store: look for the dpsql schema: %w", err)
	}
	r := rows.Values[0]
	n, err := asInt(r[0])
	if err != nil {
		return st, err
	}
	st.tables = n == int64(len(tables))
	st.spend, _ = r[1].(bool)
	st.current, _ = r[2].(bool)
	st.owner = asString(r[3])
	st.isOwner, _ = r[4].(bool)
	st.canCreate, _ = r[5].(bool)
	st.role = asString(r[6])
	st.limits, _ = r[7].(bool)
	st.spendAcct, _ = r[8].(bool)
	if st.owner == "" {
		return st, nil
	}
	if st.accounts, err = hasAccounts(ctx, q); err != nil {
		return st, err
	}
	// Write rights on dpsql's tables (or on some of their columns), and CREATE on the schema,
	// held by anyone but the schema's owner: earlier dpsql versions documented GRANT INSERT ON
	// dpsql.charges and GRANT UPDATE ON dpsql.budget for the analyst role.
	rows, err = q.Query(ctx, `SELECT DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END
		FROM pg_catalog.pg_namespace n
		CROSS JOIN LATERAL (
			SELECT x.grantee, x.privilege_type, n.nspowner AS owner FROM aclexplode(n.nspacl) x
			UNION ALL
			SELECT x.grantee, x.privilege_type, c.relowner FROM pg_catalog.pg_class c, aclexplode(c.relacl) x
				WHERE c.relnamespace = n.oid
			UNION ALL
			SELECT x.grantee, x.privilege_type, c.relowner FROM pg_catalog.pg_class c
				JOIN pg_catalog.pg_attribute t ON t.attrelid = c.oid, aclexplode(t.attacl) x
				WHERE c.relnamespace = n.oid) a
		WHERE n.nspname = 'dpsql' AND a.grantee <> n.nspowner AND a.grantee <> a.owner
			AND a.privilege_type IN ('CREATE', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER')
		ORDER BY 1`)
	if err != nil {
		return st, fmt.Errorf("store: read the rights on the dpsql schema: %w", err)
	}
	for _, r := range rows.Values {
		st.strays = append(st.strays, asString(r[0]))
	}
	return st, nil
}

// upToDate reports whether Init has nothing to do.
func (st pgState) upToDate() bool {
	return st.tables && st.limits && st.accounts && st.current && len(st.strays) == 0
}

// initPostgres creates what is missing and migrates a database an earlier dpsql initialised:
// it creates (or replaces) dpsql.fits and dpsql.spend, gives them to the schema's owner,
// revokes EXECUTE from PUBLIC, and revokes write rights on dpsql's tables (and CREATE on the
// schema) from every role but the owner. It runs in one transaction.
func initPostgres(ctx context.Context, b backend.Backend, st pgState) error {
	err := b.Tx(ctx, func(q backend.Querier) error {
		if !st.tables {
			for _, s := range initStmts(backend.Postgres) {
				if err := q.Exec(ctx, s); err != nil {
					return err
				}
			}
		}
		if !st.limits {
			if err := addLimits(ctx, q); err != nil {
				return err
			}
		}
		if !st.accounts {
			if err := addAccounts(ctx, q); err != nil {
				return err
			}
		}
		for _, s := range pgFunctions {
			if err := q.Exec(ctx, s); err != nil {
				return err
			}
		}
		if !st.spendAcct {
			// Who could spend without an account can spend with one: the engine roles of an
			// existing deployment serve dpsql serve's analysts too.
			if err := grantLike(ctx, q, "pg_catalog.pg_proc", "'"+SpendSignature+"'::regprocedure", "proacl", "proowner",
				"EXECUTE", "FUNCTION "+SpendAnalystSignature); err != nil {
				return err
			}
		}
		now, err := readPGState(ctx, q)
		if err != nil {
			return err
		}
		// The functions belong to the schema's owner even when a member of that role ran Init.
		for _, f := range []string{fitsSignature, SpendAnalystSignature, SpendSignature} {
			if err := q.Exec(ctx, "ALTER FUNCTION "+f+" OWNER TO "+now.owner); err != nil {
				return err
			}
		}
		for _, role := range now.strays {
			for _, s := range []string{
				"REVOKE " + writePrivileges + " ON ALL TABLES IN SCHEMA dpsql FROM " + role,
				"REVOKE CREATE ON SCHEMA dpsql FROM " + role,
			} {
				if err := q.Exec(ctx, s); err != nil {
					return err
				}
			}
		}
		if now, err = readPGState(ctx, q); err != nil {
			return err
		}
		if !now.upToDate() {
			return fmt.Errorf("store: the dpsql schema is still not up to date after the migration (functions current: %v; write rights left to: %s)",
				now.current, strings.Join(now.strays, ", "))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: cannot create or upgrade the dpsql schema (the role that owns it must do this, on a writable database): %w", err)
	}
	return nil
}

// addLimits creates dpsql.limits and lets every role that may read dpsql.budget (the engine
// roles of an existing deployment, see docs/postgres.md) read it too, so that upgrading dpsql
// does not lock them out; a new deployment's set-up grants it with the other tables.
func addLimits(ctx context.Context, q backend.Querier) error {
	for _, s := range limitsStmts {
		if err := q.Exec(ctx, s); err != nil {
			return err
		}
	}
	return grantLike(ctx, q, "pg_catalog.pg_class", "'dpsql.budget'::regclass", "relacl", "relowner", "SELECT", "dpsql.limits")
}

// addAccounts creates dpsql.analysts and dpsql.policy, adds the analyst column to
// dpsql.charges, and lets every role that may read dpsql.budget read the new tables (the
// engine roles of an existing deployment authenticate analysts from dpsql.analysts). Every
// session reads the policy generation at each statement, so dpsql.policy (one counter, no
// data) is readable by PUBLIC: a deployment whose grants predate it keeps working. Only roles
// with USAGE on the schema reach it.
func addAccounts(ctx context.Context, q backend.Querier) error {
	for _, s := range append(accountsStmts, `GRANT SELECT ON dpsql.policy TO PUBLIC`) {
		if err := q.Exec(ctx, s); err != nil {
			return err
		}
	}
	return grantLike(ctx, q, "pg_catalog.pg_class", "'dpsql.budget'::regclass", "relacl", "relowner", "SELECT",
		"dpsql.analysts")
}

// grantLike grants privilege on target to every role but the owner that holds it on the
// object oid of the catalog (its acl and owner columns named).
func grantLike(ctx context.Context, q backend.Querier, catalog, oid, acl, owner, privilege, target string) error {
	rows, err := q.Query(ctx, `SELECT DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END
		FROM `+catalog+` o, aclexplode(o.`+acl+`) a
		WHERE o.oid = `+oid+` AND a.privilege_type = $1 AND a.grantee <> o.`+owner+`
		ORDER BY 1`, privilege)
	if err != nil {
		return err
	}
	for _, r := range rows.Values {
		if err := q.Exec(ctx, "GRANT "+privilege+" ON "+target+" TO "+asString(r[0])); err != nil {
			return err
		}
	}
	return nil
}

// CheckOwner refuses a connection whose role is not the data owner. On PostgreSQL the owner is
// the role that owns the dpsql schema, or a role that has its privileges (a member that
// inherits them; superusers); on a database without a dpsql schema, a role that may create
// it. On DuckDB whoever can open the file for writing is its owner, so there is nothing to
// check.
func CheckOwner(ctx context.Context, b backend.Backend) error {
	if b.Dialect() != backend.Postgres {
		return nil
	}
	st, err := readPGState(ctx, b)
	if err != nil {
		return err
	}
	switch {
	case st.owner != "" && !st.isOwner:
		return sqlerr.New(sqlerr.Pos{}, sqlerr.InsufficientPrivilege,
			"role %s is not the data owner of this database: the dpsql schema belongs to %s", st.role, st.owner).
			WithHint("only the role that owns the dpsql schema (or a member of it) can open the database as its owner (--owner); without --owner this role runs analysts' statements")
	case st.owner == "" && !st.canCreate:
		return sqlerr.New(sqlerr.Pos{}, sqlerr.InsufficientPrivilege,
			"role %s cannot create the dpsql schema in this database, so it cannot be its data owner", st.role).
			WithHint("connect as the role that owns the database, or have it run GRANT CREATE ON DATABASE ... TO %s", st.role)
	}
	return nil
}

// outdated is the error analysts get on a database an earlier dpsql initialised, which has no
// dpsql.spend function yet.
func outdated() error {
	return &sqlerr.Error{
		Code: sqlerr.ObjectNotInPrerequisite,
		Msg:  "this database's dpsql schema was created by an earlier version of dpsql and has no dpsql.spend function",
		Hint: "the data owner must open it once with --owner, which upgrades the schema, then grant EXECUTE ON FUNCTION " +
			SpendSignature + " to the engine role (docs/postgres.md)",
		Cause: ErrOutdated,
	}
}
