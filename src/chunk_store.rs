//! The chunk tier's object store on Workers: `stead_vfs::tier::ObjectStore`
//! over the R2 bucket binding `CHUNKS` (one bucket for every agent; keys by
//! content hash). Each method is one R2 call; what is stored where, and
//! every check of what comes back, is the core's (`stead_vfs::tier`).

use stead_vfs::tier::{ObjectStore, StoreError, StoreOp};
use worker::{Bucket, Data, Env};

/// The binding's name in `wrangler.toml`.
const CHUNKS_BINDING: &str = "CHUNKS";

/// The bucket, if the deployment binds one.
pub(crate) struct R2Store(Bucket);

impl R2Store {
    pub(crate) fn from_env(env: &Env) -> Option<R2Store> {
        env.bucket(CHUNKS_BINDING).ok().map(R2Store)
    }
}

fn failed(op: StoreOp, key: &str) -> impl FnOnce(worker::Error) -> StoreError + '_ {
    move |error| StoreError::Failed {
        op,
        key: key.to_string(),
        reason: error.to_string(),
    }
}

impl ObjectStore for R2Store {
    async fn put(&self, key: &str, bytes: &[u8]) -> Result<(), StoreError> {
        self.0
            .put(key, Data::Bytes(bytes.to_vec()))
            .execute()
            .await
            .map_err(failed(StoreOp::Put, key))?;
        Ok(())
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let object = self
            .0
            .get(key)
            .execute()
            .await
            .map_err(failed(StoreOp::Get, key))?;
        let Some(object) = object else {
            return Ok(None);
        };
        match object.body() {
            Some(body) => Ok(Some(body.bytes().await.map_err(failed(StoreOp::Get, key))?)),
            None => Ok(Some(Vec::new())),
        }
    }

    async fn head(&self, key: &str) -> Result<Option<u64>, StoreError> {
        let object = self.0.head(key).await.map_err(failed(StoreOp::Head, key))?;
        Ok(object.map(|object| object.size()))
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.0
            .delete(key)
            .await
            .map_err(failed(StoreOp::Delete, key))
    }

    async fn list(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        let listed = self
            .0
            .list()
            .prefix(prefix)
            .limit(limit.min(1000) as u32)
            .execute()
            .await
            .map_err(failed(StoreOp::List, prefix))?;
        Ok(listed.objects().iter().map(|object| object.key()).collect())
    }
}
