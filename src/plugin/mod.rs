//! The Bevy layer: the plugin group and its members, components, the time-sliced queue,
//! movement, claims and diagnostics.
//!
//! - [`request`]: [`PathRequest`](request::PathRequest), its status, origin and lifecycle.
//! - [`outcomes`]: [`PathOutcome`](outcomes::PathOutcome) and the [`NavPath`](outcomes::NavPath)
//!   component.
//! - [`queue`]: validation, the start policy, inline slicing, workers, delivery, repath on edit.
//! - [`movement`]: following paths, crowd decisions, claims upkeep.
//! - [`group`]: group orders ([`group_order`](group::group_order)): a slot per unit, one shared
//!   search.
//! - [`classes`]: unit classes ([`UnitClass`](classes::UnitClass)) and the class grids maps
//!   keep for them; [`fog`]: fog of war, what each player's units have seen.
//! - [`orders`]: queued waypoints and patrols ([`OrderQueue`](orders::OrderQueue)), stop and
//!   hold position.
//! - [`pursuit`]: follow orders on moving units ([`Pursuit`](pursuit::Pursuit)).
//! - [`saves`]: saved games ([`save_with`](saves::save_with)): what is saved, what is rebuilt.
//! - [`lockstep`]: the stable order units are handled in and the desync checksum of
//!   lockstep mode.
//! - [`traffic`]: which wide units will cross which passages one cell wide, and which way.
//! - [`map`], [`agent`], [`claims`], [`settings`], [`schedule`], [`diagnostics`].

pub mod agent;
pub mod claims;
pub mod classes;
mod cpu_clock;
pub mod diagnostics;
pub mod fog;
pub mod group;
pub mod lockstep;
pub mod map;
pub mod movement;
pub mod orders;
pub mod outcomes;
pub mod pursuit;
pub mod queue;
pub mod request;
pub mod saves;
pub mod schedule;
pub mod settings;
pub mod traffic;

use bevy::app::PluginGroupBuilder;
use bevy::ecs::schedule::ScheduleLabel;
use bevy::prelude::*;

use diagnostics::TilepathDiagnosticsPlugin;
use movement::MovementPlugin;
use queue::PathQueuePlugin;
use schedule::TilepathSchedule;

/// Everything bevy_tilepath does, as one plugin group running in one schedule (default
/// `Update`): [`PathQueuePlugin`] (requests, the queue, workers), [`MovementPlugin`] (optional:
/// leave it out to move units yourself), [`TilepathDiagnosticsPlugin`], and, with their cargo
/// features, `TilemapNavPlugin` (`tilemap`) and `TilepathDebugPlugin` (`debug`).
///
/// ```
/// use bevy::prelude::*;
/// use bevy_tilepath::prelude::*;
/// use bevy_tilepath::plugin::movement::MovementPlugin;
///
/// let mut app = App::new();
/// app.add_plugins((
///     MinimalPlugins,
///     // Searches and movement in the fixed timestep, without the movement plugin.
///     TilepathPlugins::in_schedule(FixedUpdate)
///         .build()
///         .disable::<MovementPlugin>(),
/// ));
/// ```
#[derive(Default)]
pub struct TilepathPlugins {
    /// The schedule every member runs in.
    pub schedule: TilepathSchedule,
}

impl TilepathPlugins {
    /// The group running in `schedule` (e.g. `FixedUpdate`).
    pub fn in_schedule(schedule: impl ScheduleLabel) -> Self {
        TilepathPlugins {
            schedule: TilepathSchedule::new(schedule),
        }
    }
}

impl PluginGroup for TilepathPlugins {
    fn build(self) -> PluginGroupBuilder {
        let schedule = self.schedule;
        let group = PluginGroupBuilder::start::<Self>()
            .add(PathQueuePlugin { schedule })
            .add(MovementPlugin { schedule })
            .add(TilepathDiagnosticsPlugin { schedule });
        #[cfg(feature = "tilemap")]
        let group = group.add(crate::tilemap::TilemapNavPlugin { schedule });
        #[cfg(feature = "avian")]
        let group = group.add(crate::avian::TilepathAvianPlugin { schedule });
        #[cfg(feature = "debug")]
        let group = group.add(crate::debug::TilepathDebugPlugin { schedule });
        group
    }
}
