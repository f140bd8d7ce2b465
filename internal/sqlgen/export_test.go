package sqlgen

// PgPriority exposes pgPriority to the PostgreSQL uniformity test.
var PgPriority = pgPriority
var Priority = priority
var CountCode = countCode
var PgFormatTotal = pgFormatTotal
