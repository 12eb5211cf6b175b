import GRDB

/// A new SQLite store written in one step: its current schema in one transaction, with every
/// migration recorded as applied in GRDB's `grdb_migrations` table, instead of running its
/// migrations one transaction each. A first run opens both stores (the state store and the
/// response cache) before its first request, and every run of the benchmarks starts without them:
/// the state store's five migrations were 9.3 of the 13.9 million instructions of making it, the
/// cache's 7.6 of 13.8 (BENCHMARKS.md). An existing store is migrated as before.
///
/// A new store is normally written from its template instead (`StoreTemplate`), which is the file
/// this writes; this remains the way where the template can't be written, and what the template is
/// made from (`StoreTemplateTests`).
///
/// Each store's tests check that `schema` is what its migrations make, statement by statement
/// (`StateStoreTests`, `CacheIndexFormatTests`).
enum SchemaCreation {
    /// Writes `schema` into the database if it has neither `grdb_migrations` nor `marker` (a table
    /// of the schema), checked again under the write lock so that two processes making the same
    /// store at once make it once. Returns whether it wrote it: then nothing is left to migrate.
    static func createIfNew(_ pool: StoreConnections, schema: String, marker: String, migrator: DatabaseMigrator) throws -> Bool {
        let isNew = { (db: Database) throws -> Bool in try !db.tableExists("grdb_migrations") && !db.tableExists(marker) }
        guard try pool.writeWithoutTransaction(isNew) else { return false }
        return try pool.writeWithoutTransaction { db in
            var made = false
            try db.inTransaction(.immediate) {
                guard try isNew(db) else { return .commit }
                try db.execute(sql: schema)
                try db.execute(sql: "CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
                for identifier in migrator.migrations {
                    try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES (?)", arguments: [identifier])
                }
                made = true
                return .commit
            }
            return made
        }
    }

    /// Makes the store's schema if the database is new, and migrates it otherwise.
    static func prepare(_ pool: StoreConnections, schema: String, marker: String, migrator: DatabaseMigrator) throws {
        if try !createIfNew(pool, schema: schema, marker: marker, migrator: migrator) {
            try migrator.migrate(pool.writer)
        }
    }
}
