// Package pgwire serves dpsql over the PostgreSQL v3 wire protocol, so that psql, pgx,
// psycopg, JDBC and BI tools work against dpsql unchanged (dpsql serve).
//
// # Connections
//
// Server.Serve runs one goroutine per connection (plus one that reads its messages, so that
// a client that goes away cancels its running statement). A connection starts with the
// startup packets: SSLRequest (TLS when Server.TLS is set, else 'N'), GSSENCRequest ('N'),
// CancelRequest (cancels the running statement of the connection whose BackendKeyData it
// repeats, the secret compared in constant time) and StartupMessage 3.0 (a newer 3.x gets
// NegotiateProtocolVersion and speaks 3.0; other versions are refused). With
// Server.RequireTLS, a StartupMessage that did not come over TLS gets FATAL 28000 ("this
// server requires TLS: connect with sslmode=require").
//
// Authentication is SCRAM-SHA-256 only (internal/scram), never cleartext or md5. An unknown
// user runs the same exchange against a fake verifier derived from Server.Secret and the
// name as Server.FoldUser folds it (as the Handler looks names up, so that an unknown name's
// spellings get one salt as a known name's do), and both failures send the same 28P01
// error. After login the account's name as the Handler stores it (AccountSession, else the
// folded name) is the one logged and reported as current_user and session_authorization. A client that sends no proof is
// refused. Then the server reports its settings (ParameterStatus: server_version "16.0
// (dpsql ...)", UTF8, DateStyle ISO, TimeZone, ...), BackendKeyData and ReadyForQuery.
//
// # Who answers what
//
// Each statement of a Query message (cut at semicolons outside quotes and comments) and each
// prepared statement goes to one of three places:
//
//   - pgwire itself (local.go), for what clients send on connect: SET/RESET/SHOW of
//     PostgreSQL settings (settings.go), transactions (BEGIN, COMMIT, ROLLBACK, SAVEPOINT...:
//     no-ops, but ReadyForQuery's status follows PostgreSQL's, including 'E' after an error
//     until ROLLBACK), DISCARD, DEALLOCATE and SELECT of version(), current_setting(...),
//     current_schema(), current_database(), current_user.
//   - pgcatalog.Query, for queries over pg_catalog and information_schema (psql's \d,
//     JDBC's DatabaseMetaData), answered from Session.Relations without reading data.
//   - Session.Exec for everything else, including dpsql's own SET and SHOW statements (SET
//     BUDGET, SET LIMITS, SHOW BUDGET, SHOW TABLES...): a SET or SHOW of a name that is not
//     a PostgreSQL setting goes to the session. Consecutive engine statements of one Query
//     message go to the session as one script.
//
// # Describe never runs a statement
//
// Running an anonymized query charges the privacy budget, so describing a prepared statement
// (Describe 'S') never runs it: an engine statement answers ParameterDescription (text for
// parameters the client did not type) and NoData. Clients then learn the columns from the
// portal's Describe (pgx and JDBC send one before each Execute), which runs the statement
// with its bound arguments and keeps the rows for Execute. Execute with a row limit sends
// PortalSuspended and keeps the rest for the next Execute.
//
// # Parameters
//
// $n arguments are passed to Session.Exec in order. A text parameter the client did not type
// (OID 0 or unknown, or text after we described it as text) is the analyst's own value:
// "12" is an int64, "1.5" a float64, "true"/"false" a bool, anything else a string. Typed
// parameters (int2/4/8, float4/8, numeric, bool, text, date, timestamp[tz]) are read in text
// or binary format.
//
// # Types
//
// Engine column types map to OIDs: BIGINT int8, INTEGER int4, SMALLINT/TINYINT int2,
// HUGEINT and DECIMAL(p,s) numeric (with typmod), DOUBLE float8, FLOAT/REAL float4, VARCHAR
// varchar, TEXT text, BOOLEAN bool, DATE, TIME, TIMESTAMP, TIMESTAMP WITH TIME ZONE,
// INTERVAL, BLOB bytea, UUID, JSON; X[] the array of X; anything else text. Values are sent
// in PostgreSQL's text output (t/f, shortest round-trip floats as PostgreSQL 12+ prints
// them, NaN/Infinity, ISO dates and timestamps, timestamptz in UTC with "+00", arrays as
// {1,2,NULL}), or in binary (pgx's pgtype) for the columns the client asks binary for.
//
// # Errors
//
// A *sqlerr.Error becomes an ErrorResponse with its SQLSTATE, message, hint, "rule: <Rule>"
// as detail and its position as a 1-based character position in the client's query string
// (also in multi-statement queries). Any other error, and internal ones (XX000), are sent as
// "internal error" only; Server.Log gets the detail. Result notices become NoticeResponses
// before the statement's CommandComplete.
//
// # Limits
//
// A message larger than Server.MaxMessageSize (16 MiB), a startup packet larger than 10000
// bytes, or any malformed message closes that connection only; a panic in a connection is
// recovered and closes it. Startup and authentication must finish within
// Server.AuthTimeout (10 s), and one remote address has at most Server.MaxStartupsPerIP
// (10) connections still logging in: one more gets FATAL 53300 at once. A connection holds
// at most 10000 prepared statements and as many portals, and at most
// Server.MaxPreparedBytes (64 MiB) in them: statement texts, bound arguments and the rows a
// portal keeps for later Executes (held.go); Parse and Bind beyond it fail with 54000 until
// the client closes some, and a portal run past it keeps its rows but the connection then
// runs no other portal until it closes some. A session statement_timeout adds a deadline to each statement; it cannot loosen
// the engine's own. Server.Log never receives statement text or values.
package pgwire
