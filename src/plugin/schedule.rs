//! [`TilepathSystems`]: the order of the plugin group's work within its one schedule.

use bevy::ecs::schedule::{InternedScheduleLabel, ScheduleLabel};
use bevy::prelude::*;

/// The order of the plugin group's work within its schedule (default `Update`). Order your
/// systems around these: e.g. insert [`PathRequest`](crate::PathRequest)s before `Collect` to
/// have them considered the same frame, read [`PathOutcome`](crate::PathOutcome)s after
/// `Receive`.
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TilepathSystems {
    /// Integrations first: tilemap edits become grid edits here.
    First,
    /// Repath units whose path crosses edited cells; validate new requests and queue them.
    Collect,
    /// Start at most `searches_per_frame` searches; advance inline searches within budget.
    Service,
    /// Take finished searches (inline and from workers) and deliver outcomes.
    Receive,
    /// Move units along their paths; claims and occupancy.
    Move,
    /// Per-frame figures, diagnostics and the debug overlay.
    Last,
}

/// Points inside [`TilepathSystems`] that the integrations order their systems against.
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Step {
    /// Queued and follow orders advance (in `First`): tilemap edits come before.
    Orders,
    /// The lockstep checksum is taken (in `Last`): whatever moves bodies or draws comes before.
    Checksum,
}

/// The schedule a member plugin of [`TilepathPlugins`](crate::TilepathPlugins) runs in: the
/// group's (`Update` unless it is given another), or the one you give a member added alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TilepathSchedule(pub InternedScheduleLabel);

impl Default for TilepathSchedule {
    fn default() -> Self {
        TilepathSchedule(Update.intern())
    }
}

impl TilepathSchedule {
    /// `schedule`.
    pub fn new(schedule: impl ScheduleLabel) -> Self {
        TilepathSchedule(schedule.intern())
    }

    /// Orders [`TilepathSystems`] in this schedule (every member does it; twice is harmless) and
    /// returns its label.
    pub(crate) fn configure(self, app: &mut App) -> InternedScheduleLabel {
        TilepathSystems::configure(app, self.0);
        self.0
    }
}

impl TilepathSystems {
    /// Orders the sets in `schedule`.
    fn configure(app: &mut App, schedule: InternedScheduleLabel) {
        app.configure_sets(
            schedule,
            (
                TilepathSystems::First,
                TilepathSystems::Collect,
                TilepathSystems::Service,
                TilepathSystems::Receive,
                TilepathSystems::Move,
                TilepathSystems::Last,
            )
                .chain(),
        );
    }
}
