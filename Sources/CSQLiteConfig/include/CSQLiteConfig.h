#ifndef CSQLITECONFIG_H
#define CSQLITECONFIG_H

/// `sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0)`: SQLite stops counting the memory it allocates,
/// which it does under a global mutex in every `sqlite3_malloc` and `sqlite3_free`. `sqlite3_config`
/// is variadic, which Swift does not import. Takes effect only before SQLite's first use in the
/// process; returns SQLite's result code (`SQLITE_MISUSE` when it came too late).
int fk_sqlite_memory_statistics_off(void);

#endif
