//! The local store: one SQLite file (through `rusqlite`, with SQLite built in), in WAL mode so a
//! reader never waits for the writer. Each update is one `IMMEDIATE` transaction: it takes the
//! write lock before it reads, so two processes can never both read the same state and each
//! write their own (the lost update). A process that finds the lock held waits for it (SQLite's
//! busy handler) up to [`BUSY_WAIT`], then fails, and the call is not allowed.
//!
//! The file holds three tables: `sc_meta` (its format), `sc_states` (a state per key, as the
//! JSON [`crate::rules::state::CrewState`] writes) and `sc_values` (a text per [`ValueKey`]: sc-hook's
//! call links of each session). A store of format 1, made before `sc_values`, is brought to
//! format 2 when it is opened (the table is added, nothing else changes); a program that knows
//! only format 1 then refuses it with a clear message. A file that is not SQLite, a database of
//! something else, another format, or a state that is not what this program writes is refused,
//! never read as a clean state.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior};

use super::{
    parse_state, OpenOptions, StateKey, Store, StoreError, ValueChange, ValueKey, ValueRead,
    ValueRefused,
};
use crate::rules::state::{rfc3339_seconds, unix_seconds, CrewState};

/// The format this program writes, in `sc_meta`.
pub(crate) const FORMAT: &str = "skeleton-crew state 2";
/// The format before `sc_values`: opened, it is brought to [`FORMAT`].
pub(crate) const FORMAT_1: &str = "skeleton-crew state 1";
/// The table of values ([`ValueKey`]), added in format 2.
const VALUES_TABLE: &str = "CREATE TABLE sc_values (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL, updated TEXT NOT NULL) STRICT;";
/// The other two tables of a store, as every format made them (SQLite keeps the statement
/// without `IF NOT EXISTS` and its `;`, which [`NOT_OURS`] compares).
const META_TABLE: &str =
    "CREATE TABLE sc_meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) STRICT;";
const STATES_TABLE: &str = "CREATE TABLE sc_states (key TEXT PRIMARY KEY NOT NULL, state TEXT NOT NULL, updated TEXT NOT NULL) STRICT;";
/// How long an update waits for another process's transaction before it fails.
pub(crate) const BUSY_WAIT: Duration = Duration::from_secs(10);

/// Why a SQLite file could not be used as a state store ([`StoreError::Unavailable`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum SqliteProblem {
    #[error("cannot create its folder {}: {error}", .folder.display())]
    CannotCreateFolder {
        folder: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot create it: {0}")]
    CannotCreate(std::io::Error),
    #[error("there is no such file")]
    NoSuchFile,
    #[error("cannot open it: {0}")]
    CannotOpen(rusqlite::Error),
    #[error("it cannot be put in WAL mode (its journal mode is {0})")]
    NotWal(String),
    #[error(
        "its format is {}, not {FORMAT:?}: it was written by another version, or edited",
        serde_json::Value::String(.0.clone())
    )]
    OtherFormat(String),
    #[error("its `sc_meta` table has no format: it was edited")]
    NoFormat,
    #[error(
        "it is a SQLite database of something else (it has tables, but no `sc_meta`), not a Skeleton Crew state store"
    )]
    SomethingElse,
    #[error(
        "it holds what a Skeleton Crew state store never has (a view, a trigger, another table or index): it was edited"
    )]
    NotOnlyTables,
    #[error("a write to it changed {0} rows instead of one: it was edited")]
    WriteIgnored(usize),
    /// A state stored under a path that is not a [`StateKey::path`].
    #[error(
        "a state is stored under {}, a key this program never writes: the store was edited",
        serde_json::Value::String(.0.clone())
    )]
    StrayKey(String),
    /// What SQLite said, with its result code.
    #[error("{}", describe(.0))]
    Sqlite(rusqlite::Error),
}

impl From<rusqlite::Error> for SqliteProblem {
    fn from(err: rusqlite::Error) -> Self {
        SqliteProblem::Sqlite(err)
    }
}

impl SqliteProblem {
    /// Whether SQLite failed only because another process held the database (its result code
    /// `DatabaseBusy` or `DatabaseLocked`, with SQLite's own message).
    fn is_busy(&self) -> bool {
        use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked};
        matches!(
            self,
            SqliteProblem::Sqlite(rusqlite::Error::SqliteFailure(failure, Some(_)))
                if matches!(failure.code, DatabaseBusy | DatabaseLocked)
        )
    }
}

/// Creates `path` empty with mode 600 when it does not exist yet; an existing file is left as
/// it is.
fn create_private_file(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(err) => Err(err),
    }
}

/// A schema row that is not one of a state store's own: its three tables, spelt exactly, and
/// their primary keys' automatic indexes. Listed by what is allowed, not by what is refused: a
/// review retyped a trigger's row `'Trigger'` and named a view `SC_META`, and SQLite still built
/// both from their text.
/// A table's definition is compared too: a review redefined `sc_states` with a generated column
/// `NOT NULL ON CONFLICT IGNORE`, and every taint written after was silently dropped.
const NOT_OURS: &str = "NOT ((type = 'table' AND \
     ((name = 'sc_meta' AND sql = 'CREATE TABLE sc_meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) STRICT') \
     OR (name = 'sc_states' AND sql = 'CREATE TABLE sc_states (key TEXT PRIMARY KEY NOT NULL, state TEXT NOT NULL, updated TEXT NOT NULL) STRICT') \
     OR (name = 'sc_values' AND sql = 'CREATE TABLE sc_values (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL, updated TEXT NOT NULL) STRICT'))) \
     OR (type = 'index' AND name GLOB 'sqlite_autoindex_sc_*' AND sql IS NULL))";

/// An open SQLite state file.
pub(crate) struct SqliteStore {
    connection: Connection,
    shown: String,
}

impl SqliteStore {
    /// Opens (and with `options.create`, creates) the file, in WAL mode, and checks that it is a
    /// state store of this program's format (a new file becomes one).
    pub fn open(path: &Path, options: OpenOptions) -> Result<SqliteStore, StoreError> {
        let shown = format!("sqlite:{}", absolute(path).display());
        let fail = |problem: SqliteProblem| StoreError::Unavailable {
            store: shown.clone(),
            problem: Box::new(problem),
        };
        if options.create {
            if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(folder).map_err(|error| {
                    fail(SqliteProblem::CannotCreateFolder {
                        folder: folder.to_owned(),
                        error,
                    })
                })?;
            }
            // Made readable by its owner only before SQLite opens it: the store holds what
            // untrusted tools returned (taint causes, provenance). SQLite gives its side files
            // (-wal, -shm, -journal) the mode of the database file.
            create_private_file(path).map_err(|err| fail(SqliteProblem::CannotCreate(err)))?;
        } else if !path.exists() {
            return Err(fail(SqliteProblem::NoSuchFile));
        }
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if options.create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let connection = Connection::open_with_flags(path, flags)
            .map_err(|err| fail(SqliteProblem::CannotOpen(err)))?;
        // What the file holds is data: its schema may not call functions with side effects, and
        // this connection may not rewrite the schema itself.
        use rusqlite::config::DbConfig;
        for (setting, on) in [
            (DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false),
            (DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true),
        ] {
            connection
                .set_db_config(setting, on)
                .map_err(|err| fail(SqliteProblem::CannotOpen(err)))?;
        }
        let store = SqliteStore {
            connection,
            shown: shown.clone(),
        };
        // Processes that open a new file at once race to put it in WAL mode and to make its
        // tables; SQLite then answers "busy" at once, without waiting in its busy handler. Such a
        // start is tried again, with a pause, for as long as an update would wait.
        let deadline = std::time::Instant::now() + BUSY_WAIT;
        let mut pause = Duration::from_millis(2);
        loop {
            match store.prepare(options.fsync) {
                Ok(()) => return Ok(store),
                Err(problem) if problem.is_busy() && std::time::Instant::now() < deadline => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                Err(problem) => return Err(fail(problem)),
            }
        }
    }

    fn prepare(&self, fsync: bool) -> Result<(), SqliteProblem> {
        self.connection.busy_timeout(BUSY_WAIT)?;
        // A store already of this format (every open but a file's first) is only read: no write
        // lock, on the path each sc-hook call takes. Anything else (no table yet, an older
        // format, an error, something not only tables) takes the locked path below, which decides.
        // One statement: the format, found only where the schema holds nothing but tables. It
        // comes before the journal mode is set: a database that is not a store is left as it was.
        let known: Option<String> = self
            .connection
            .query_row(
                &format!(
                    "SELECT value FROM sc_meta WHERE key = 'format'
                     AND NOT EXISTS (SELECT 1 FROM sqlite_schema WHERE {NOT_OURS})"
                ),
                [],
                |row| row.get(0),
            )
            .ok();
        if known.as_deref() != Some(FORMAT) {
            self.refuse_what_is_not_a_store()?;
        }
        let mode: String =
            self.connection
                .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(SqliteProblem::NotWal(mode));
        }
        // In WAL mode, NORMAL survives a crash of the process (not of the machine); FULL, with
        // --fsync, survives both.
        self.connection.pragma_update(
            None,
            "synchronous",
            if fsync { "FULL" } else { "NORMAL" },
        )?;
        if known.as_deref() == Some(FORMAT) {
            return Ok(());
        }
        // Made a store in one transaction that holds the write lock, so two processes that
        // open a new file at once do not both make it.
        self.connection.execute_batch("BEGIN IMMEDIATE")?;
        let made = self.make_tables();
        let ended = match made {
            Ok(()) => self.connection.execute_batch("COMMIT"),
            Err(_) => self.connection.execute_batch("ROLLBACK"),
        };
        made?;
        ended?;
        let format = self.format()?;
        if !self.only_tables()? {
            return Err(SqliteProblem::NotOnlyTables);
        }
        format_known(format, &[FORMAT])
    }

    /// The format `sc_meta` records, if any.
    fn format(&self) -> rusqlite::Result<Option<String>> {
        self.connection
            .query_row(
                "SELECT value FROM sc_meta WHERE key = 'format'",
                [],
                |row| row.get(0),
            )
            .optional()
    }

    /// A database that is not a state store (nor an empty file to make one in) refused before
    /// anything in it is changed, its journal mode included: a file of another program named by
    /// mistake is left as it was.
    fn refuse_what_is_not_a_store(&self) -> Result<(), SqliteProblem> {
        // One statement, so one reading of the schema: between two, another process making this
        // file a store could commit its tables, and the second would see them without `sc_meta`
        // having been seen by the first (sixteen hooks starting on a new store at once).
        let (ours, named): (i64, i64) = self.connection.query_row(
            "SELECT (SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'sc_meta'),
                    (SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%')",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        if ours == 0 && named > 0 {
            return Err(SqliteProblem::SomethingElse);
        }
        if !self.only_tables()? {
            return Err(SqliteProblem::NotOnlyTables);
        }
        if ours > 0 {
            // Another program's `sc_meta` is refused before its file changes too.
            format_known(self.format()?, &[FORMAT, FORMAT_1])?;
        }
        Ok(())
    }

    /// Whether the schema holds only a state store's own tables and indexes ([`NOT_OURS`]): a
    /// view or trigger would make the store do what it was not asked (a trigger that deletes a
    /// session's taint; a view that answers the format of another table).
    fn only_tables(&self) -> rusqlite::Result<bool> {
        let others: i64 = self.connection.query_row(
            &format!("SELECT count(*) FROM sqlite_schema WHERE {NOT_OURS}"),
            [],
            |row| row.get(0),
        )?;
        Ok(others == 0)
    }

    /// In a transaction: the tables and the format of a new store; for a store of format 1, its
    /// `sc_values` table and format 2; nothing for a store of format 2 (or of a format this
    /// program does not know, refused after); an error for a database of something else.
    fn make_tables(&self) -> Result<(), SqliteProblem> {
        let count = |sql: &str| -> rusqlite::Result<i64> {
            self.connection.query_row(sql, [], |row| row.get(0))
        };
        if count("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'sc_meta'")?
            > 0
        {
            let format1 = count(&format!(
                "SELECT count(*) FROM sc_meta WHERE key = 'format' AND value = '{FORMAT_1}'"
            ))? > 0;
            if format1 {
                self.connection.execute_batch(&format!(
                    "{VALUES_TABLE}
                         UPDATE sc_meta SET value = '{FORMAT}' WHERE key = 'format';"
                ))?;
            }
            return Ok(());
        }
        if count("SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'")? > 0 {
            return Err(SqliteProblem::SomethingElse);
        }
        self.connection.execute_batch(&format!(
            "{META_TABLE}
                 {STATES_TABLE}
                 {VALUES_TABLE}
                 INSERT INTO sc_meta (key, value) VALUES ('format', '{FORMAT}');"
        ))?;
        Ok(())
    }

    /// One update in one transaction; `beside`, when given, is a value read in it and given to
    /// `update` ([`Store::update_beside`]).
    fn run_update(
        &mut self,
        key: &StateKey,
        beside: Option<&ValueKey>,
        update: &mut dyn FnMut(&mut CrewState, ValueRead<'_>),
    ) -> Result<(), StoreError> {
        let shown = self.shown.clone();
        let fail = |err: rusqlite::Error| StoreError::Unavailable {
            store: shown.clone(),
            problem: Box::new(SqliteProblem::Sqlite(err)),
        };
        let path = key.path();
        let transaction = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(fail)?;
        let stored: Option<String> = transaction
            .prepare_cached("SELECT state FROM sc_states WHERE key = ?1")
            .and_then(|mut select| select.query_row([&path], |row| row.get(0)).optional())
            .map_err(fail)?;
        // The value as stored: anything but UTF-8 text (a blob, a number, a null, which a file
        // edited by hand can hold, and which `sc-state grants` cannot list) is the value's
        // refusal, given to `update`, not the update's.
        let value: Option<Result<String, ValueRefused>> = match beside {
            Some(beside) => transaction
                .prepare_cached("SELECT value FROM sc_values WHERE key = ?1")
                .and_then(|mut select| {
                    select
                        .query_row([beside.path()], |row| Ok(stored_text(row.get_ref(0)?)))
                        .optional()
                })
                .map_err(fail)?,
            None => None,
        };
        let value = match (beside, value) {
            (Some(beside), Some(Err(why))) => Err(StoreError::RefusedValue {
                store: shown.clone(),
                key: beside.clone(),
                why,
            }),
            (_, Some(Ok(text))) => Ok(Some(text)),
            _ => Ok(None),
        };
        let mut state = match &stored {
            Some(text) => parse_state(&self.shown, key, text.as_bytes())?,
            None => CrewState {
                span: key.span(),
                ..CrewState::new()
            },
        };
        // Nothing is written when nothing changed (a state never stored stays unstored).
        let before = state.clone();
        update(&mut state, value.as_ref().map(Option::as_deref));
        if before != state {
            let text = serde_json::to_string(&state).expect("a crew state serializes");
            let updated = rfc3339_seconds(unix_seconds(SystemTime::now()));
            transaction
                .prepare_cached(
                    "INSERT INTO sc_states (key, state, updated) VALUES (?1, ?2, ?3)
                     ON CONFLICT (key) DO UPDATE SET state = excluded.state, updated = excluded.updated",
                )
                .and_then(|mut upsert| upsert.execute([&path, &text, &updated]))
                .map_err(fail)
                .and_then(|rows| written_once(rows, &shown))?;
        }
        transaction.commit().map_err(fail)
    }
}

/// A value read beside a state, if it is UTF-8 text, else why it is refused.
fn stored_text(value: rusqlite::types::ValueRef) -> Result<String, ValueRefused> {
    use rusqlite::types::ValueRef;
    match value {
        ValueRef::Text(bytes) => {
            String::from_utf8(bytes.to_vec()).map_err(|err| ValueRefused::NotUtf8 {
                offset: err.utf8_error().valid_up_to(),
            })
        }
        ValueRef::Blob(_) => Err(ValueRefused::NotText("a blob")),
        ValueRef::Integer(_) => Err(ValueRefused::NotText("an integer")),
        ValueRef::Real(_) => Err(ValueRefused::NotText("a real number")),
        ValueRef::Null => Err(ValueRefused::NotText("null")),
    }
}

/// A recorded format that is one of `known`, else why not.
fn format_known(format: Option<String>, known: &[&str]) -> Result<(), SqliteProblem> {
    match format {
        Some(format) if known.contains(&format.as_str()) => Ok(()),
        Some(other) => Err(SqliteProblem::OtherFormat(other)),
        None => Err(SqliteProblem::NoFormat),
    }
}

/// An upsert writes exactly one row; anything else (a conflict clause an edit put in the
/// table, which drops the write without an error) fails closed.
fn written_once(rows: usize, shown: &str) -> Result<(), StoreError> {
    if rows == 1 {
        return Ok(());
    }
    Err(StoreError::Unavailable {
        store: shown.to_owned(),
        problem: Box::new(SqliteProblem::WriteIgnored(rows)),
    })
}

impl SqliteStore {
    fn run_update_value(
        &mut self,
        key: &ValueKey,
        update: &mut dyn FnMut(Option<&str>) -> Result<ValueChange, ValueRefused>,
    ) -> Result<(), StoreError> {
        let shown = self.shown.clone();
        let fail = |err: rusqlite::Error| StoreError::Unavailable {
            store: shown.clone(),
            problem: Box::new(SqliteProblem::Sqlite(err)),
        };
        let path = key.path();
        let transaction = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(fail)?;
        let stored: Option<String> = transaction
            .prepare_cached("SELECT value FROM sc_values WHERE key = ?1")
            .and_then(|mut select| select.query_row([&path], |row| row.get(0)).optional())
            .map_err(fail)?;
        // Refused: the transaction is rolled back when dropped, and nothing is written.
        let change = update(stored.as_deref()).map_err(|why| StoreError::RefusedValue {
            store: shown.clone(),
            key: key.clone(),
            why,
        })?;
        match change {
            ValueChange::Keep => {}
            ValueChange::Set(text) => {
                let updated = rfc3339_seconds(unix_seconds(SystemTime::now()));
                transaction
                    .prepare_cached(
                        "INSERT INTO sc_values (key, value, updated) VALUES (?1, ?2, ?3)
                         ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated = excluded.updated",
                    )
                    .and_then(|mut upsert| upsert.execute([&path, &text, &updated]))
                    .map_err(fail)
                    .and_then(|rows| written_once(rows, &shown))?;
            }
            ValueChange::Remove => {
                transaction
                    .prepare_cached("DELETE FROM sc_values WHERE key = ?1")
                    .and_then(|mut delete| delete.execute([&path]))
                    .map_err(fail)?;
            }
        }
        transaction.commit().map_err(fail)
    }

    fn error(&self, problem: SqliteProblem) -> StoreError {
        StoreError::Unavailable {
            store: self.shown.clone(),
            problem: Box::new(problem),
        }
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl Store for SqliteStore {
    fn describe(&self) -> &str {
        &self.shown
    }

    fn update(
        &mut self,
        key: &StateKey,
        update: &mut dyn FnMut(&mut CrewState),
    ) -> Result<(), StoreError> {
        self.run_update(key, None, &mut |state, _| update(state))
    }

    /// The value read in the state's own transaction.
    fn update_beside(
        &mut self,
        key: &StateKey,
        beside: &ValueKey,
        update: &mut dyn FnMut(&mut CrewState, ValueRead<'_>),
    ) -> Result<(), StoreError> {
        self.run_update(key, Some(beside), update)
    }

    fn read(&mut self, key: &StateKey) -> Result<Option<CrewState>, StoreError> {
        let stored: Option<String> = self
            .connection
            .prepare_cached("SELECT state FROM sc_states WHERE key = ?1")
            .and_then(|mut select| select.query_row([key.path()], |row| row.get(0)).optional())
            .map_err(|err| self.error(err.into()))?;
        stored
            .map(|text| parse_state(&self.shown, key, text.as_bytes()))
            .transpose()
    }

    fn keys(&mut self) -> Result<Vec<StateKey>, StoreError> {
        let fail = |err: rusqlite::Error| self.error(err.into());
        let mut select = self
            .connection
            .prepare("SELECT key FROM sc_states ORDER BY key")
            .map_err(fail)?;
        let paths = select
            .query_map([], |row| row.get::<_, String>(0))
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(fail)?;
        paths
            .into_iter()
            .map(|path| {
                StateKey::parse(&path).ok_or_else(|| self.error(SqliteProblem::StrayKey(path)))
            })
            .collect()
    }

    fn update_value(
        &mut self,
        key: &ValueKey,
        update: &mut dyn FnMut(Option<&str>) -> Result<ValueChange, ValueRefused>,
    ) -> Result<(), StoreError> {
        self.run_update_value(key, update)
    }
}

/// A SQLite error in words (`database is locked`, `file is not a database`).
fn describe(err: &rusqlite::Error) -> String {
    match err {
        rusqlite::Error::SqliteFailure(failure, Some(message)) => {
            format!("{message} ({:?})", failure.code)
        }
        other => other.to_string(),
    }
}

/// The path made absolute (against the working folder), for the audit log.
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{ValueChange, ValueKey, View};

    #[test]
    fn a_write_that_changed_no_row_fails_closed() {
        assert!(written_once(1, "sqlite:s").is_ok());
        for rows in [0, 2] {
            let err = written_once(rows, "sqlite:s").unwrap_err().to_string();
            assert!(
                err.contains(&format!("a write to it changed {rows} rows instead of one")),
                "{err}"
            );
        }
    }

    #[test]
    fn the_schema_check_names_each_table_as_it_is_made() {
        for table in [META_TABLE, STATES_TABLE, VALUES_TABLE] {
            let kept = table.trim_end_matches(';');
            assert!(NOT_OURS.contains(&format!("sql = '{kept}'")), "{kept}");
        }
    }

    fn open(path: &Path) -> SqliteStore {
        SqliteStore::open(
            path,
            OpenOptions {
                create: true,
                fsync: false,
            },
        )
        .unwrap()
    }

    #[test]
    fn a_state_written_is_read_back_by_another_connection() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deep/state.sqlite");
        let key = StateKey::crew("payments", View::Gate);
        open(&path)
            .update(&key, &mut |state| state.crew_spent = 12.5)
            .unwrap();
        let mut other = open(&path);
        let state = other.read(&key).unwrap().unwrap();
        assert_eq!(state.crew_spent, 12.5);
        assert_eq!(
            state.span,
            crate::rules::state::Span::Crew("payments".into())
        );
        assert_eq!(other.read(&StateKey::crew("x", View::Gate)).unwrap(), None);
        assert_eq!(other.keys().unwrap(), vec![key]);
    }

    #[test]
    fn a_value_is_updated_atomically_removed_and_refused_when_its_reader_refuses_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.sqlite");
        let key = ValueKey::links("s1");
        let mut store = open(&path);
        store
            .update_value(&key, &mut |stored| {
                assert_eq!(stored, None);
                Ok(ValueChange::Set("[1]".into()))
            })
            .unwrap();
        let mut other = open(&path);
        let mut seen = None;
        other
            .update_value(&key, &mut |stored| {
                seen = stored.map(str::to_owned);
                Ok(ValueChange::Keep)
            })
            .unwrap();
        assert_eq!(seen.as_deref(), Some("[1]"));
        // A value is not a state: `keys` does not list it, and `sc-state` does not choke on it.
        assert_eq!(other.keys().unwrap(), vec![]);
        let err = other
            .update_value(&key, &mut |_| Err(ValueRefused::Reader("not ours".into())))
            .unwrap_err();
        assert!(matches!(err, StoreError::RefusedValue { .. }), "{err:?}");
        let err = err.to_string();
        assert!(
            err.contains("the call links of session s1 are not what this program writes")
                && err.ends_with(": not ours"),
            "{err}"
        );
        other
            .update_value(&key, &mut |_| Ok(ValueChange::Remove))
            .unwrap();
        store
            .update_value(&key, &mut |stored| {
                assert_eq!(stored, None);
                Ok(ValueChange::Keep)
            })
            .unwrap();
    }

    #[test]
    fn a_store_of_format_1_is_brought_to_format_2_and_keeps_its_states() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.sqlite");
        let key = StateKey::crew("c", View::Gate);
        open(&path)
            .update(&key, &mut |s| s.crew_spent = 3.0)
            .unwrap();
        // As version 1 made it: no `sc_values`.
        Connection::open(&path)
            .unwrap()
            .execute_batch(&format!(
                "DROP TABLE sc_values; UPDATE sc_meta SET value = '{FORMAT_1}'"
            ))
            .unwrap();
        let mut store = SqliteStore::open(&path, OpenOptions::default()).unwrap();
        assert_eq!(store.read(&key).unwrap().unwrap().crew_spent, 3.0);
        store
            .update_value(&ValueKey::links("s"), &mut |_| {
                Ok(ValueChange::Set("[]".into()))
            })
            .unwrap();
        let format: String = Connection::open(&path)
            .unwrap()
            .query_row(
                "SELECT value FROM sc_meta WHERE key = 'format'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(format, FORMAT);
    }

    #[test]
    fn what_is_not_a_state_store_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("garbage.sqlite");
        std::fs::write(&garbage, vec![b'x'; 4096]).unwrap();
        let err = SqliteStore::open(&garbage, OpenOptions::default()).unwrap_err();
        assert!(err.to_string().contains("not a database"), "{err}");

        let other = dir.path().join("other.sqlite");
        Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE people (name TEXT)")
            .unwrap();
        let err = SqliteStore::open(&other, OpenOptions::default()).unwrap_err();
        assert!(
            matches!(
                &err,
                StoreError::Unavailable { problem, .. }
                    if matches!(problem.downcast_ref(), Some(SqliteProblem::SomethingElse))
            ),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .contains("a SQLite database of something else"),
            "{err}"
        );

        let missing = dir.path().join("missing.sqlite");
        let err = SqliteStore::open(&missing, OpenOptions::default()).unwrap_err();
        assert!(err.to_string().contains("no such file"), "{err}");
        assert!(!missing.exists());

        let edited = dir.path().join("edited.sqlite");
        let key = StateKey::crew("c", View::Gate);
        open(&edited)
            .update(&key, &mut |s| s.crew_spent = 1.0)
            .unwrap();
        Connection::open(&edited)
            .unwrap()
            .execute_batch("UPDATE sc_states SET state = '{\"agents\":[]}'")
            .unwrap();
        let mut store = open(&edited);
        let err = store.read(&key).unwrap_err();
        assert!(matches!(err, StoreError::RefusedState { .. }), "{err:?}");
        assert!(
            err.to_string()
                .contains("refused rather than read as clean"),
            "{err}"
        );
        let err = store.update(&key, &mut |_| {}).unwrap_err();
        assert!(
            err.to_string().contains("`agents` must be an object"),
            "{err}"
        );
        Connection::open(&edited)
            .unwrap()
            .execute_batch("UPDATE sc_meta SET value = 'skeleton-crew state 99'")
            .unwrap();
        let err = SqliteStore::open(&edited, OpenOptions::default()).unwrap_err();
        assert!(err.to_string().contains("its format is"), "{err}");
    }

    #[test]
    fn a_new_store_and_its_side_files_are_its_owners_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("private/state.sqlite");
        let mut store = open(&path);
        store
            .update(&StateKey::crew("c", View::Gate), &mut |s| {
                s.crew_spent = 1.0
            })
            .unwrap();
        // While the store is open, SQLite keeps its WAL and shared-memory files beside it.
        let mut seen = 0;
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut name = path.clone().into_os_string();
            name.push(suffix);
            let Ok(meta) = std::fs::metadata(&name) else {
                continue;
            };
            seen += 1;
            let mode = meta.permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}: {mode:o}", PathBuf::from(name).display());
        }
        assert!(seen >= 3, "the store and its -wal and -shm files");
        drop(store);
        // An existing file keeps the mode it has.
        let other = dir.path().join("shared.sqlite");
        std::fs::write(&other, b"").unwrap();
        std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o640)).unwrap();
        drop(open(&other));
        let mode = std::fs::metadata(&other).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
    }

    /// A shared lock of another open file description (`F_OFD_SETLK`), held until dropped: it
    /// conflicts with SQLite's own locks as another process's would, even in this process.
    struct ReadLock {
        /// The description the lock belongs to: closed, and the lock let go, when dropped.
        _file: std::fs::File,
    }

    impl ReadLock {
        /// `None` when `path` cannot be opened for reading (a reader cannot make it).
        fn hold(path: &Path, start: i64, len: i64) -> Option<ReadLock> {
            use std::os::fd::AsRawFd;
            let file = std::fs::File::open(path).ok()?;
            // SAFETY: a zeroed flock is valid; F_OFD_SETLK reads it, l_pid must be 0.
            let mut lock: libc::flock = unsafe { std::mem::zeroed() };
            lock.l_type = libc::F_RDLCK as libc::c_short;
            lock.l_whence = libc::SEEK_SET as libc::c_short;
            lock.l_start = start;
            lock.l_len = len;
            // SAFETY: a valid descriptor and a valid flock.
            let held = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &lock) };
            assert_eq!(held, 0, "{}", std::io::Error::last_os_error());
            Some(ReadLock { _file: file })
        }
    }

    /// Between connections the store leaves no `-wal` or `-shm` file, and a reader that holds
    /// every lock it can take on what is there while writes go on loses none of them. A review
    /// broke a store that kept both files with the `-wal` emptied (journal_size_limit 0): a
    /// reader's shared locks on the `-shm` (its live-connection byte and read marks) and on the
    /// database kept the stale index while writers appended behind a zeroed WAL header, and once
    /// the reader let go every write since was gone, the taint with them.
    #[test]
    fn a_reader_holding_the_locks_it_can_take_loses_no_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.sqlite");
        let side = |suffix: &str| {
            let mut name = path.clone().into_os_string();
            name.push(suffix);
            PathBuf::from(name)
        };
        let key = StateKey::crew("c", View::Gate);
        let mut store = open(&path);
        store.update(&key, &mut |s| s.crew_spent += 1.0).unwrap();
        drop(store);
        assert!(!side("-wal").exists() && !side("-shm").exists());
        let locks = [
            ReadLock::hold(&side("-shm"), 128, 1),
            ReadLock::hold(&side("-shm"), 124, 4),
            ReadLock::hold(&path, 0x4000_0002, 1),
        ];
        for spent in [2.0, 3.0] {
            let mut store = open(&path);
            store.update(&key, &mut |s| s.crew_spent += spent).unwrap();
            drop(store);
        }
        drop(locks);
        assert_eq!(open(&path).read(&key).unwrap().unwrap().crew_spent, 6.0);
    }
}
