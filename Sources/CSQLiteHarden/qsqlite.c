// The variadic sqlite3_db_config calls Swift cannot make itself.
#include "qsqlite.h"
#include <sqlite3.h>

int qsqlite_harden(void *connection) {
    sqlite3 *db = connection;
    const int off[][2] = {
        {SQLITE_DBCONFIG_DEFENSIVE, 1},
        {SQLITE_DBCONFIG_ENABLE_VIEW, 0},
        {SQLITE_DBCONFIG_ENABLE_TRIGGER, 0},
        {SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0},
        {SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0},
    };
    for (unsigned i = 0; i < sizeof off / sizeof off[0]; i++) {
        int now = -1;
        int rc = sqlite3_db_config(db, off[i][0], off[i][1], &now);
        if (rc != SQLITE_OK) return rc;
        if (now != off[i][1]) return SQLITE_ERROR;
    }
    return SQLITE_OK;
}
