-- The data owner's setup of the example shop database (run with --owner or --init).
-- Paths are relative to the repository root, where the README's commands run.

-- Each purchase and each customer belongs to one customer: customer_id is the privacy unit.
CREATE OR REPLACE TABLE purchases OPTIONS(anonymization_userid_column='customer_id') AS
  SELECT * FROM read_csv('examples/shop/purchases.csv');
CREATE OR REPLACE TABLE customers OPTIONS(anonymization_userid_column='customer_id') AS
  SELECT * FROM read_csv('examples/shop/customers.csv');

-- The product catalogue is public: analysts may read it and join it freely.
CREATE OR REPLACE TABLE items OPTIONS(public=true) AS
  SELECT * FROM read_csv('examples/shop/items.csv');

-- The seed examples of ZetaSQL's documentation: a raw table, hidden from analysts, and
-- private views over it.
CREATE OR REPLACE TABLE professors AS
  SELECT * FROM (VALUES (101, 'pencil', 24), (123, 'pen', 16), (123, 'pencil', 10), (123, 'pencil', 38),
                        (101, 'pen', 19), (101, 'pen', 23), (130, 'scissors', 8), (150, 'pencil', 72))
    AS t(id, item, quantity);
CREATE OR REPLACE VIEW view_on_professors OPTIONS(anonymization_userid_column='id') AS
  SELECT * FROM professors;
CREATE OR REPLACE TABLE students AS
  SELECT * FROM (VALUES (1, 'pencil', 5), (1, 'pen', 2), (2, 'pen', 1), (3, 'pen', 4)) AS t(id, item, quantity);
CREATE OR REPLACE VIEW view_on_students OPTIONS(anonymization_userid_column='id') AS
  SELECT * FROM students;

-- The total privacy budget analysts may spend on this database.
SET BUDGET OPTIONS(epsilon=20, delta=1e-4);
