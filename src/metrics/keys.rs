//! Each metric's name, unit and help text, and their [`Key`]s for one
//! prefix and label set.

use ::metrics::{Key, Label, Unit};

/// The default name prefix.
pub(super) const PREFIX: &str = "tickwheel";

/// Each metric: its name after the prefix, unit and help text.
pub(super) const LIVE: (&str, Unit, &str) = (
    "live",
    Unit::Count,
    "Sleeps and timeouts alive, registered or not (what max_pending bounds).",
);
pub(super) const PENDING: (&str, Unit, &str) =
    ("pending", Unit::Count, "Timers registered in the wheel.");
pub(super) const HEADROOM: (&str, Unit, &str) = (
    "headroom",
    Unit::Count,
    "Sleeps the timer still accepts before max_pending refuses one.",
);
pub(super) const ENTRY_BYTES: (&str, Unit, &str) = (
    "entry_bytes",
    Unit::Bytes,
    "Bytes of entry storage the wheels hold.",
);
pub(super) const REGISTERED: (&str, Unit, &str) = (
    "registered_total",
    Unit::Count,
    "Timers registered in the wheel since the timer started.",
);
pub(super) const FIRED: (&str, Unit, &str) = (
    "fired_total",
    Unit::Count,
    "Timers the driver fired at their deadline.",
);
pub(super) const CANCELLED: (&str, Unit, &str) = (
    "cancelled_total",
    Unit::Count,
    "Timers removed before firing (dropped, reset, or ended by shutdown).",
);
pub(super) const WAKEUPS: (&str, Unit, &str) = (
    "driver_wakeups_total",
    Unit::Count,
    "Times the timer's driver task woke up.",
);
pub(super) const WAKE_PANICS: (&str, Unit, &str) = (
    "wake_panics_total",
    Unit::Count,
    "Wakers that panicked when the driver woke them.",
);
pub(super) const LATENESS: (&str, Unit, &str) = (
    "lateness_seconds",
    Unit::Seconds,
    "How late fired timers were, at the timer's bucket resolution.",
);

/// The keys of every metric, made once per prefix and label set.
#[derive(Debug, Clone)]
pub(super) struct Keys {
    pub(super) live: Key,
    pub(super) pending: Key,
    pub(super) headroom: Key,
    pub(super) entry_bytes: Key,
    pub(super) registered: Key,
    pub(super) fired: Key,
    pub(super) cancelled: Key,
    pub(super) wakeups: Key,
    pub(super) wake_panics: Key,
    pub(super) lateness: Key,
}

impl Keys {
    pub(super) fn new(prefix: &str, labels: &[Label]) -> Keys {
        let key = |(name, _, _): (&str, Unit, &str)| {
            let name = if prefix.is_empty() {
                name.to_owned()
            } else {
                format!("{prefix}_{name}")
            };
            Key::from_parts(name, labels.to_vec())
        };
        Keys {
            live: key(LIVE),
            pending: key(PENDING),
            headroom: key(HEADROOM),
            entry_bytes: key(ENTRY_BYTES),
            registered: key(REGISTERED),
            fired: key(FIRED),
            cancelled: key(CANCELLED),
            wakeups: key(WAKEUPS),
            wake_panics: key(WAKE_PANICS),
            lateness: key(LATENESS),
        }
    }
}
