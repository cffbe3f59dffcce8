//! PROTOTYPE
use std::cell::Cell;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::sync::Arc;

use crate::engine::shard::Shard;

thread_local! {
    static KEPT: Cell<Option<Arc<Shard>>> = const { Cell::new(None) };
}

pub(crate) struct ShardRef(ManuallyDrop<Arc<Shard>>);

impl ShardRef {
    #[inline]
    pub(crate) fn new(shard: &Arc<Shard>) -> Self {
        let kept = KEPT.try_with(|k| match k.take() {
            Some(a) if Arc::ptr_eq(&a, shard) => Some(a),
            other => {
                k.set(other);
                None
            }
        });
        ShardRef(ManuallyDrop::new(match kept {
            Ok(Some(a)) => a,
            _ => Arc::clone(shard),
        }))
    }
    pub(crate) fn from_arc(a: Arc<Shard>) -> Self {
        ShardRef(ManuallyDrop::new(a))
    }
}

impl Deref for ShardRef {
    type Target = Arc<Shard>;
    #[inline]
    fn deref(&self) -> &Arc<Shard> {
        &self.0
    }
}

impl Drop for ShardRef {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: taken once, here, never used after.
        let a = unsafe { ManuallyDrop::take(&mut self.0) };
        let back = KEPT.try_with(|k| match k.take() {
            None => {
                k.set(Some(a));
                None
            }
            Some(old) => {
                k.set(Some(old));
                Some(a)
            }
        });
        match back { Ok(x) => drop(x), Err(_) => {} }
    }
}
impl std::fmt::Debug for ShardRef { fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { self.0.fmt(f) } }
