//! [`Sql`] over Durable Object SQLite (`ctx.storage.sql`).
//!
//! The only JavaScript-facing part of storage. Transactions use
//! `ctx.storage.transactionSync`, which rolls back when its callback throws:
//! a Rust error inside the body is parked, turned into a throw, and handed
//! back to the caller after the rollback.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Function, Reflect, Uint8Array};
use stead_sql::{Param, Row, Sql, SqlError, Value};
use wasm_bindgen::{closure::Closure, JsCast, JsValue};
use worker::{SqlStorage, SqlStorageValue, State};

/// The Durable Object's SQLite database.
#[derive(Clone)]
pub(crate) struct DoSql {
    sql: SqlStorage,
    storage: JsValue,
    /// Statements run since the object started, for the per-request
    /// breakdown local development answers with.
    statements: Rc<Cell<u64>>,
}

impl DoSql {
    pub(crate) fn new(state: &State) -> worker::Result<Self> {
        let storage: JsValue = state.as_raw().storage()?.into();
        Ok(DoSql {
            sql: state.storage().sql(),
            storage,
            statements: Rc::default(),
        })
    }

    /// Statements run since the object started.
    pub(crate) fn statements_run(&self) -> u64 {
        self.statements.get()
    }

    /// Bytes the database occupies on disk.
    pub(crate) fn database_size(&self) -> usize {
        self.sql.database_size()
    }
}

fn to_js(param: &Param<'_>) -> JsValue {
    match *param {
        Param::Null => JsValue::NULL,
        // Values beyond 2^53 do not occur: inode numbers, sizes and
        // milliseconds all stay far below it.
        Param::Integer(i) => JsValue::from_f64(i as f64),
        Param::Text(s) => JsValue::from_str(s),
        Param::Blob(b) => Uint8Array::from(b).into(),
    }
}

fn from_storage(value: SqlStorageValue) -> Value {
    match value {
        SqlStorageValue::Null => Value::Null,
        SqlStorageValue::Boolean(b) => Value::Integer(i64::from(b)),
        SqlStorageValue::Integer(i) => Value::Integer(i),
        SqlStorageValue::Float(f) => Value::Real(f),
        SqlStorageValue::String(s) => Value::Text(s),
        SqlStorageValue::Blob(b) => Value::Blob(b),
    }
}

fn js_message(error: &JsValue) -> String {
    Reflect::get(error, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| error.as_string())
        .unwrap_or_else(|| format!("{error:?}"))
}

impl Sql for DoSql {
    fn query(&self, statement: &str, params: &[Param<'_>]) -> Result<Vec<Row>, SqlError> {
        self.statements.set(self.statements.get() + 1);
        let bindings: Vec<JsValue> = params.iter().map(to_js).collect();
        let cursor = self
            .sql
            .exec_raw(statement, bindings)
            .map_err(|e| SqlError::engine(statement, e.to_string()))?;
        cursor
            .raw()
            .map(|row| {
                row.map(|values| Row(values.into_iter().map(from_storage).collect()))
                    .map_err(|e| SqlError::engine(statement, e.to_string()))
            })
            .collect()
    }

    fn transaction<T, E>(&self, body: impl FnOnce() -> Result<T, E>) -> Result<T, E>
    where
        E: From<SqlError>,
    {
        let body = RefCell::new(Some(body));
        let outcome: RefCell<Option<Result<T, E>>> = RefCell::new(None);
        let run = || -> Result<JsValue, JsValue> {
            let body = body
                .borrow_mut()
                .take()
                .expect("transaction body runs once");
            let result = body();
            let failed = result.is_err();
            *outcome.borrow_mut() = Some(result);
            if failed {
                // Throwing makes transactionSync roll back.
                Err(JsValue::from_str("stead: transaction rolled back"))
            } else {
                Ok(JsValue::UNDEFINED)
            }
        };
        // SAFETY of the lifetime erasure below: transactionSync calls the
        // callback synchronously and keeps no reference to it afterwards, so
        // the closure never outlives this stack frame.
        let run: Box<dyn FnMut() -> Result<JsValue, JsValue> + '_> = Box::new(run);
        let run: Box<dyn FnMut() -> Result<JsValue, JsValue> + 'static> =
            unsafe { std::mem::transmute(run) };
        let callback = Closure::wrap(run);
        let transaction_sync = Reflect::get(&self.storage, &JsValue::from_str("transactionSync"))
            .ok()
            .and_then(|f| f.dyn_into::<Function>().ok());
        let Some(transaction_sync) = transaction_sync else {
            return Err(SqlError::engine("transactionSync", "not available").into());
        };
        let called = transaction_sync.call1(&self.storage, callback.as_ref());
        drop(callback);
        match (outcome.into_inner(), called) {
            (Some(Ok(value)), Ok(_)) => Ok(value),
            (Some(Err(error)), _) => Err(error),
            // The body succeeded but the commit itself failed.
            (_, Err(error)) => Err(SqlError::engine("transactionSync", js_message(&error)).into()),
            (None, Ok(_)) => Err(SqlError::engine("transactionSync", "callback never ran").into()),
        }
    }
}
