//! Live heap bytes (a counting global allocator) and the process's CPU time
//! and context switches (from `/proc`), for W3 and W5.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

// ---------------------------------------------------------------------------
// Live-heap accounting

/// Delegates to the system allocator and keeps a count of live heap bytes,
/// so W3 can report memory per pending timer.
struct CountingAlloc;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards its arguments unchanged to `System`, which
// upholds the `GlobalAlloc` contract; the only addition is a relaxed atomic
// counter update, which neither allocates nor touches the memory.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees for `layout` are passed on as is.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` (through this allocator)
        // with `layout`, as the caller guarantees.
        unsafe { System.dealloc(ptr, layout) };
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's guarantees for `ptr`, `layout` and `new_size`
        // are passed on as is.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE_BYTES.fetch_add(new_size, Ordering::Relaxed);
        }
        new
    }
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

pub fn live_bytes() -> usize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

// ---------------------------------------------------------------------------
// Process CPU time and context switches, from /proc

/// CPU time of the process's live threads, in ns.
pub fn cpu_ns() -> u64 {
    schedstat_sum(0)
}

/// Time the process's live threads spent runnable but waiting for a CPU (the
/// machine busy with other work), in ns.
pub fn runqueue_wait_ns() -> u64 {
    schedstat_sum(1)
}

/// Field `field` of `/proc/self/task/*/schedstat`, summed over the threads.
fn schedstat_sum(field: usize) -> u64 {
    let mut total = 0;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) {
                total += text
                    .split_whitespace()
                    .nth(field)
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    total
}

/// Voluntary + involuntary context switches of the process's live threads.
pub fn context_switches() -> u64 {
    let mut total = 0;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(task.path().join("status")) {
                for line in text.lines() {
                    if line.contains("ctxt_switches:") {
                        total += line
                            .split_whitespace()
                            .last()
                            .and_then(|v| v.parse::<u64>().ok())
                            .unwrap_or(0);
                    }
                }
            }
        }
    }
    total
}

// ---------------------------------------------------------------------------
// Lateness percentiles (W6, W8, W12, W14, DQ1)

/// A lateness slot no completion has written yet.
pub const NOT_FIRED: i64 = i64::MIN;

/// How late `now` is for `deadline`, in ns (negative: early).
pub fn lateness_ns(now: std::time::Instant, deadline: std::time::Instant) -> i64 {
    if now >= deadline {
        (now - deadline).as_nanos() as i64
    } else {
        -((deadline - now).as_nanos() as i64)
    }
}

/// Lateness samples in ns (negative: early), sorted.
pub struct Lateness(Vec<i64>);

impl Lateness {
    /// At least one sample.
    pub fn new(mut ns: Vec<i64>) -> Self {
        assert!(!ns.is_empty(), "no lateness samples");
        ns.sort_unstable();
        Lateness(ns)
    }

    pub fn from_atomics(ns: &[AtomicI64]) -> Self {
        Lateness::new(ns.iter().map(|l| l.load(Ordering::Acquire)).collect())
    }

    /// The `q` quantile (nearest rank), in ms.
    pub fn ms_at(&self, q: f64) -> f64 {
        let n = self.0.len();
        self.0[((n as f64 * q).ceil() as usize).clamp(1, n) - 1] as f64 / 1e6
    }

    pub fn max_ms(&self) -> f64 {
        self.ms_at(1.0)
    }

    /// Samples at least `d` late.
    pub fn at_least(&self, d: std::time::Duration) -> usize {
        let ns = d.as_nanos() as i64;
        self.0.len() - self.0.partition_point(|&l| l < ns)
    }

    /// Samples that fired before their deadline.
    pub fn early(&self) -> usize {
        self.0.iter().filter(|&&l| l < 0).count()
    }
}
