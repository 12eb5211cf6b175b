#include "CSQLiteConfig.h"
#include <sqlite3.h>

int fk_sqlite_memory_statistics_off(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
