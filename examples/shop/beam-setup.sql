-- The data owner's setup of the example shop for dpsql-beam (run with --init). The purchases
-- are split over eight Parquet files, each customer's purchases spread over several of them;
-- the customers over two. Paths are relative to the beam/ directory, where the README's
-- dpsql-beam command runs (go -C beam run ./cmd/dpsql-beam ...).

-- Each purchase and each customer belongs to one customer: customer_id is the privacy unit.
-- dpsql-beam splits a private relation by file: it must be a view whose rows come from files.
CREATE VIEW purchases OPTIONS(anonymization_userid_column='customer_id') AS
  (SELECT * FROM read_parquet('../examples/shop/parquet/purchases-*.parquet'));
CREATE VIEW customers OPTIONS(anonymization_userid_column='customer_id') AS
  (SELECT * FROM read_parquet('../examples/shop/parquet/customers-*.parquet'));

-- The product catalogue is public: every worker reads it whole, to join it freely.
CREATE VIEW items OPTIONS(public=true) AS
  (SELECT * FROM read_csv('../examples/shop/items.csv'));

-- The privacy budget analysts may spend in this run (kept in memory; --ledger FILE.duckdb
-- charges a budget shared between runs instead).
SET BUDGET OPTIONS(epsilon=20, delta=1e-4);
