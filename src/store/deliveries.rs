//! The webhook deliveries kept in the job store, read back: raw for `autofix replay`, as the
//! server read them for the jobs they belong to, and the older ones that were never read.

use super::{
    Delivery, JobId, ParsedDelivery, SqliteStore, Store, StoreError, StoredDelivery, db,
    from_millis,
};
use crate::forge::{BotEvent, ForgeKind};

const DELIVERY_COLUMNS: &str = "id, forge, event, received_at, payload, job_id";
const PARSED_COLUMNS: &str = "id, parsed";

#[derive(sqlx::FromRow)]
struct DeliveryRow {
    id: String,
    forge: ForgeKind,
    event: String,
    received_at: i64,
    payload: Vec<u8>,
    job_id: Option<JobId>,
}

impl DeliveryRow {
    fn into_stored(self) -> Result<StoredDelivery, StoreError> {
        Ok(StoredDelivery {
            id: self.id,
            forge: self.forge,
            event: self.event,
            received_at: from_millis(self.received_at)?,
            payload: self.payload,
            job_id: self.job_id,
        })
    }
}

#[derive(sqlx::FromRow)]
struct ParsedRow {
    id: String,
    parsed: Option<String>,
}

impl ParsedRow {
    /// The delivery as the server read it; a row it has not read yet (recorded before
    /// deliveries were stored parsed, and not yet read at start-up) is an error of the store.
    fn into_parsed(self) -> Result<ParsedDelivery, StoreError> {
        let Some(parsed) = self.parsed else {
            return Err(StoreError::Corrupt {
                what: "delivery without its parsed event",
                value: self.id,
            });
        };
        let parsed: BotEvent =
            serde_json::from_str(&parsed).map_err(|error| StoreError::Corrupt {
                what: "parsed delivery",
                value: format!("{}: {error}", self.id),
            })?;
        Ok(ParsedDelivery {
            id: self.id,
            parsed,
        })
    }
}

/// The `deliveries.parsed` column of `delivery`: its event as JSON.
pub(super) fn parsed_column(delivery: &Delivery) -> Result<String, StoreError> {
    serde_json::to_string(&delivery.parsed).map_err(|error| StoreError::Corrupt {
        what: "event to record",
        value: format!("{}: {error}", delivery.id),
    })
}

macro_rules! delivery_dialect {
    ($name:ident, $Db:ty) => {
        mod $name {
            use super::*;
            use sqlx::Pool;

            type Db = $Db;

            pub(super) async fn delivery(
                pool: &Pool<Db>,
                id: &str,
            ) -> Result<Option<StoredDelivery>, StoreError> {
                let row: Option<DeliveryRow> =
                    sqlx::query_as(&format!("SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE id = $1"))
                        .bind(id)
                        .fetch_optional(pool)
                        .await
                        .map_err(db("could not read the delivery"))?;
                row.map(DeliveryRow::into_stored).transpose()
            }

            pub(super) async fn parsed_delivery(
                pool: &Pool<Db>,
                id: &str,
            ) -> Result<Option<ParsedDelivery>, StoreError> {
                let row: Option<ParsedRow> =
                    sqlx::query_as(&format!("SELECT {PARSED_COLUMNS} FROM deliveries WHERE id = $1"))
                        .bind(id)
                        .fetch_optional(pool)
                        .await
                        .map_err(db("could not read the delivery"))?;
                row.map(ParsedRow::into_parsed).transpose()
            }

            /// The delivery that created `job` or, for a job from before origins were recorded,
            /// the earliest one linked to it.
            pub(super) async fn job_delivery(
                pool: &Pool<Db>,
                job: JobId,
            ) -> Result<Option<ParsedDelivery>, StoreError> {
                let row: Option<ParsedRow> = sqlx::query_as(&format!(
                    "SELECT {PARSED_COLUMNS} FROM deliveries WHERE job_id = $1 \
                     ORDER BY CASE WHEN id = (SELECT origin_delivery FROM jobs WHERE id = $1) THEN 0 ELSE 1 END, \
                     received_at, id LIMIT 1"
                ))
                .bind(job)
                .fetch_optional(pool)
                .await
                .map_err(db("could not read the job's delivery"))?;
                row.map(ParsedRow::into_parsed).transpose()
            }

            /// Every delivery linked to `job`, oldest first.
            pub(super) async fn job_deliveries(
                pool: &Pool<Db>,
                job: JobId,
            ) -> Result<Vec<ParsedDelivery>, StoreError> {
                let rows: Vec<ParsedRow> = sqlx::query_as(&format!(
                    "SELECT {PARSED_COLUMNS} FROM deliveries WHERE job_id = $1 ORDER BY received_at, id"
                ))
                .bind(job)
                .fetch_all(pool)
                .await
                .map_err(db("could not read the job's deliveries"))?;
                rows.into_iter().map(ParsedRow::into_parsed).collect()
            }

            /// The ids of the deliveries linked to `job`, oldest first (no payloads).
            pub(super) async fn job_delivery_ids(
                pool: &Pool<Db>,
                job: JobId,
            ) -> Result<Vec<String>, StoreError> {
                let rows: Vec<(String,)> = sqlx::query_as(
                    "SELECT id FROM deliveries WHERE job_id = $1 ORDER BY received_at, id",
                )
                .bind(job)
                .fetch_all(pool)
                .await
                .map_err(db("could not read the job's deliveries"))?;
                Ok(rows.into_iter().map(|(id,)| id).collect())
            }

            /// Up to `limit` deliveries recorded before deliveries were stored parsed, oldest first.
            pub(super) async fn unparsed_deliveries(
                pool: &Pool<Db>,
                limit: u32,
            ) -> Result<Vec<StoredDelivery>, StoreError> {
                let rows: Vec<DeliveryRow> = sqlx::query_as(&format!(
                    "SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE parsed IS NULL ORDER BY received_at, id LIMIT $1"
                ))
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await
                .map_err(db("could not read the deliveries not yet parsed"))?;
                rows.into_iter().map(DeliveryRow::into_stored).collect()
            }

            /// Records what an earlier delivery asks, read from its payload once.
            pub(super) async fn record_parsed(
                pool: &Pool<Db>,
                id: &str,
                parsed: &str,
            ) -> Result<(), StoreError> {
                sqlx::query("UPDATE deliveries SET parsed = $2 WHERE id = $1")
                    .bind(id)
                    .bind(parsed)
                    .execute(pool)
                    .await
                    .map_err(db("could not record a delivery's parsed event"))?;
                Ok(())
            }
        }
    };
}

delivery_dialect!(sqlite, sqlx::Sqlite);
delivery_dialect!(postgres, sqlx::Postgres);

impl Store {
    /// Every delivery that created or joined `job`, oldest first, as the server read them.
    pub async fn job_deliveries(&self, job: JobId) -> Result<Vec<ParsedDelivery>, StoreError> {
        on_database!(self, => job_deliveries(job))
    }

    /// The ids of the deliveries linked to `job`, oldest first: what a running job checks often,
    /// without reading payloads.
    pub async fn job_delivery_ids(&self, job: JobId) -> Result<Vec<String>, StoreError> {
        on_database!(self, => job_delivery_ids(job))
    }

    /// The delivery recorded under `id`, if any.
    pub async fn delivery(&self, id: &str) -> Result<Option<StoredDelivery>, StoreError> {
        on_database!(self, => delivery(id))
    }

    /// The delivery recorded under `id` as the server read it, if any.
    pub async fn parsed_delivery(&self, id: &str) -> Result<Option<ParsedDelivery>, StoreError> {
        on_database!(self, => parsed_delivery(id))
    }

    /// The delivery that created `job`, as the server read it; `None` for an unknown job.
    pub async fn job_delivery(&self, job: JobId) -> Result<Option<ParsedDelivery>, StoreError> {
        on_database!(self, => job_delivery(job))
    }

    /// Up to `limit` deliveries recorded before deliveries were stored parsed, oldest first: what
    /// `autofix serve` reads once at start-up (see [`Store::record_parsed`]).
    pub async fn unparsed_deliveries(&self, limit: u32) -> Result<Vec<StoredDelivery>, StoreError> {
        on_database!(self, => unparsed_deliveries(limit))
    }

    /// Records what the earlier delivery `id` asks, read from its payload once.
    pub async fn record_parsed(&self, id: &str, parsed: &BotEvent) -> Result<(), StoreError> {
        let parsed = serde_json::to_string(parsed).map_err(|error| StoreError::Corrupt {
            what: "event to record",
            value: format!("{id}: {error}"),
        })?;
        on_database!(self, => record_parsed(id, &parsed))
    }
}
