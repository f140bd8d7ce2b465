// Package catalog is the privacy policy of a database as data: which relations are private
// (and which column is their privacy unit), which are public, and their columns.
//
// Relations the data owner has not marked private or public are hidden: analysts cannot name
// them at all. This is what stops an analyst from reading the base table under a private
// view. A Catalog therefore only answers for Private and Public relations.
//
// The package does no I/O; internal/store reads a Catalog from the database.
package catalog
