//! The Bevy layer: components, the time-sliced queue, workers, movement, claims, diagnostics.

pub mod claims;
pub mod components;
pub mod diagnostics;
pub mod map;
pub mod movement;
pub mod outcomes;
pub mod queue;
pub mod settings;

use bevy::ecs::schedule::{InternedScheduleLabel, ScheduleLabel};
use bevy::prelude::*;

use claims::Claims;
use diagnostics::TilepathDiagnostics;
use movement::Arrived;
use outcomes::PathOutcome;
use queue::{PathQueue, TilepathFrameStats};
use settings::TilepathSettings;

/// The order of the plugin's work within its schedule (default `Update`). Order your systems
/// around these: e.g. insert [`PathRequest`](components::PathRequest)s before `Collect` to have
/// them considered the same frame, read [`PathOutcome`]s after `Receive`.
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TilepathSystems {
    /// Empty: runs first.
    First,
    /// Repath units whose path crosses edited cells; validate new requests and queue them.
    Collect,
    /// Start at most `searches_per_frame` searches; advance inline searches within budget.
    Service,
    /// Take finished searches (inline and from workers) and deliver outcomes.
    Receive,
    /// Move units along their paths; claims and occupancy.
    Move,
    /// Per-frame figures and diagnostics.
    Last,
}

/// The plugin: add it with `app.add_plugins(TilepathPlugin::default())`.
///
/// It inserts [`TilepathSettings`] with `init_resource` (yours wins if inserted first), the
/// [`PathQueue`], [`Claims`], [`TilepathFrameStats`], the [`PathOutcome`] and [`Arrived`]
/// messages, and the diagnostics in [`TilepathDiagnostics`].
pub struct TilepathPlugin {
    /// The schedule the systems run in.
    pub schedule: InternedScheduleLabel,
}

impl Default for TilepathPlugin {
    fn default() -> Self {
        TilepathPlugin {
            schedule: Update.intern(),
        }
    }
}

impl TilepathPlugin {
    /// The plugin running in `schedule` (e.g. `FixedUpdate`).
    pub fn in_schedule(schedule: impl ScheduleLabel) -> Self {
        TilepathPlugin {
            schedule: schedule.intern(),
        }
    }
}

impl Plugin for TilepathPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<TilepathSettings>()
            .init_resource::<PathQueue>()
            .init_resource::<Claims>()
            .init_resource::<TilepathFrameStats>()
            .add_message::<PathOutcome>()
            .add_message::<Arrived>()
            .configure_sets(
                self.schedule,
                (
                    TilepathSystems::First,
                    TilepathSystems::Collect,
                    TilepathSystems::Service,
                    TilepathSystems::Receive,
                    TilepathSystems::Move,
                    TilepathSystems::Last,
                )
                    .chain(),
            )
            .add_systems(
                self.schedule,
                (
                    (
                        queue::prepare_scratch,
                        queue::repath_on_change,
                        queue::collect_requests,
                    )
                        .chain()
                        .in_set(TilepathSystems::Collect),
                    queue::service_queue.in_set(TilepathSystems::Service),
                    queue::receive_results.in_set(TilepathSystems::Receive),
                    (movement::release_departed, movement::move_units)
                        .chain()
                        .in_set(TilepathSystems::Move),
                    (diagnostics::publish, queue::end_frame)
                        .chain()
                        .in_set(TilepathSystems::Last),
                ),
            );
        TilepathDiagnostics::register(app);
    }
}
