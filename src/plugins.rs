//! The plugin group, [`TilepathPlugins`], and its members' wiring: the one place where the
//! systems of every part of the Bevy layer and of the integrations are put in their order. It
//! sits on top of the crate: it names every layer, and nothing names it.

use bevy::app::PluginGroupBuilder;
use bevy::ecs::schedule::{InternedScheduleLabel, ScheduleLabel};
use bevy::prelude::*;

#[cfg(feature = "avian")]
use crate::avian;
#[cfg(feature = "debug")]
use crate::debug;
use crate::plugin::agent::NavAgent;
use crate::plugin::checksum::{self, NavChecksum};
use crate::plugin::claims::{Claims, Intent};
use crate::plugin::classes::{ClassId, HeldKeys, NavClasses, PlayerId, UnitClass};
use crate::plugin::diagnostics::{
    FrameTally, TilepathDiagnosticsPlugin, TilepathFrameStats, roll_frame,
};
use crate::plugin::fog::{self, FogStats, Sight};
use crate::plugin::lifecycle;
use crate::plugin::map::links::{NavLink, PlacedLinks};
use crate::plugin::map::{self, NavMap};
use crate::plugin::movement;
use crate::plugin::movement::MovementFrameStats;
use crate::plugin::movement::cross::{EnteredLink, LeftLink};
use crate::plugin::movement::mover::{Arrived, Mover, MoverOrder};
use crate::plugin::movement::output::DesiredVelocity;
use crate::plugin::movement::state::{Errand, MoveState, PathProgress};
use crate::plugin::movement::vehicle::{DriveProgress, DriveSettings, DriveStatus, Vehicle};
use crate::plugin::orders::{self, HoldPosition, OrderQueue};
use crate::plugin::outcomes::{NavPath, OutcomeKind, PathOutcome, SearchKind};
use crate::plugin::pursuit::{self, Anchors, Pursuit};
use crate::plugin::queue::{self, path_queue::PathQueue};
use crate::plugin::request::{
    PathFailure, PathGoal, PathOrigin, PathRequest, PathStatus, PendingRequests, next_frame,
};
use crate::plugin::saves::{self, SavedNav};
use crate::plugin::schedule::{Step, TilepathSchedule, TilepathSystems};
use crate::plugin::settings::{CrowdSettings, FogSettings, Lockstep, TilepathSettings, WorkerMode};
use crate::plugin::traffic::PassageTraffic;
use crate::plugin::unit_order::LockstepKey;
#[cfg(feature = "tilemap")]
use crate::tilemap;

/// Everything bevy_tilepath does, as one plugin group running in one schedule (default
/// `Update`): [`PathQueuePlugin`] (requests, the queue, workers), [`MovementPlugin`] (optional:
/// leave it out to move units yourself), [`TilepathDiagnosticsPlugin`], and, with their cargo
/// features, `TilemapNavPlugin` (`tilemap`) and `TilepathDebugPlugin` (`debug`).
///
/// ```
/// use bevy::prelude::*;
/// use bevy_tilepath::prelude::*;
/// use bevy_tilepath::MovementPlugin;
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
        let group = group.add(tilemap::TilemapNavPlugin { schedule });
        #[cfg(feature = "avian")]
        let group = group.add(avian::TilepathAvianPlugin { schedule });
        #[cfg(feature = "debug")]
        let group = group.add(debug::TilepathDebugPlugin { schedule });
        group
    }
}

/// The queue: [`PathRequest`]s become searches (inline or on workers) and end in
/// [`PathOutcome`]s and [`NavPath`]s; with it, what feeds the queue (saved games, fog of war,
/// queued and follow orders, grid edits) and the lockstep checksum. The one plugin a game must
/// have; part of [`TilepathPlugins`].
#[derive(Default)]
pub struct PathQueuePlugin {
    /// The schedule of the plugin group.
    pub schedule: TilepathSchedule,
}

impl Plugin for PathQueuePlugin {
    fn build(&self, app: &mut App) {
        let schedule = self.schedule.configure(app);
        // A request's lifecycle reaches the queue, passage traffic and saved games, which sit
        // above the request: the hooks are registered here, not on the component.
        app.world_mut()
            .register_component_hooks::<PathRequest>()
            .on_insert(lifecycle::on_request_insert)
            .on_remove(lifecycle::on_request_remove);
        app.world_mut()
            .register_component_hooks::<PathStatus>()
            .on_despawn(lifecycle::on_unit_despawn);
        queue_resources(app);
        queue_systems(app, schedule);
    }
}

/// The resources, messages and reflected types of [`PathQueuePlugin`].
fn queue_resources(app: &mut App) {
    app.init_resource::<TilepathSettings>()
        .init_resource::<PathQueue>()
        .init_resource::<PendingRequests>()
        .init_resource::<Claims>()
        .init_resource::<PassageTraffic>()
        .init_resource::<Anchors>()
        .init_resource::<NavClasses>()
        .init_resource::<FogStats>()
        .init_resource::<FrameTally>()
        .init_resource::<TilepathFrameStats>()
        .init_resource::<NavChecksum>()
        .add_message::<PathOutcome>()
        .register_type::<TilepathSettings>()
        .register_type::<CrowdSettings>()
        .register_type::<WorkerMode>()
        .register_type::<TilepathFrameStats>()
        .register_type::<PathRequest>()
        .register_type::<PathGoal>()
        .register_type::<PathOrigin>()
        .register_type::<PathStatus>()
        .register_type::<PathFailure>()
        .register_type::<NavPath>()
        .register_type::<NavAgent>()
        .register_type::<ClassId>()
        .register_type::<PlayerId>()
        .register_type::<HeldKeys>()
        .register_type::<Sight>()
        .register_type::<FogStats>()
        .register_type::<FogSettings>()
        .register_type::<PathOutcome>()
        .register_type::<OutcomeKind>()
        .register_type::<SearchKind>()
        .register_type::<Intent>()
        .register_type::<Lockstep>()
        .register_type::<LockstepKey>()
        .register_type::<NavChecksum>()
        .register_type::<UnitClass>()
        .register_type::<NavMap>()
        .register_type::<NavLink>()
        .init_resource::<PlacedLinks>()
        .register_type::<SavedNav>()
        .register_type::<OrderQueue>()
        .register_type::<HoldPosition>()
        .register_type::<Pursuit>();
}

/// The systems of [`PathQueuePlugin`], in their order.
fn queue_systems(app: &mut App, schedule: InternedScheduleLabel) {
    app.add_systems(
        schedule,
        (
            (
                saves::restore_saved,
                map::resolve_classes,
                map::links::sync_links,
                map::jump_tables::keep_jump_tables,
                map::link_tables::keep_link_tables,
                fog::reveal_fog,
                queue::service::prepare_scratch,
                queue::repath::keep_regions,
                queue::repath::repath_on_change,
                queue::validate::collect_requests,
            )
                .chain()
                .in_set(TilepathSystems::Collect),
            (orders::advance_orders.in_set(Step::Orders), pursuit::pursue)
                .chain()
                .in_set(TilepathSystems::First),
            queue::service::service_queue.in_set(TilepathSystems::Service),
            (
                queue::delivery::receive_results,
                queue::delivery::apply_refined,
                roll_frame,
            )
                .chain()
                .in_set(TilepathSystems::Receive),
            (checksum::update_checksum.in_set(Step::Checksum), next_frame)
                .chain()
                .in_set(TilepathSystems::Last),
        ),
    );
}

/// Moves units with a [`Mover`] along their paths, with claims and crowd handling; part of
/// [`TilepathPlugins`].
#[derive(Default)]
pub struct MovementPlugin {
    /// The schedule of the plugin group.
    pub schedule: TilepathSchedule,
}

impl Plugin for MovementPlugin {
    fn build(&self, app: &mut App) {
        let schedule = self.schedule.configure(app);
        app.init_resource::<TilepathSettings>()
            .init_resource::<Claims>()
            .init_resource::<PassageTraffic>()
            .init_resource::<PendingRequests>()
            .add_message::<Arrived>()
            .add_message::<EnteredLink>()
            .add_message::<LeftLink>()
            .register_type::<Mover>()
            .register_type::<PathProgress>()
            .register_type::<MoveState>()
            .register_type::<Errand>()
            .register_type::<Arrived>()
            .register_type::<EnteredLink>()
            .register_type::<LeftLink>()
            .register_type::<DesiredVelocity>()
            .init_resource::<MoverOrder>()
            .init_resource::<DriveSettings>()
            .register_type::<Vehicle>()
            .register_type::<DriveProgress>()
            .register_type::<DriveStatus>()
            .register_type::<DriveSettings>()
            .init_resource::<MovementFrameStats>()
            .register_type::<MovementFrameStats>()
            .add_systems(
                schedule,
                (
                    movement::system::release_departed,
                    movement::mover::order_movers,
                    movement::system::move_units,
                    movement::drive::drive_vehicles,
                    movement::push::push_apart,
                    movement::facing::face_on_arrival,
                )
                    .chain()
                    .in_set(TilepathSystems::Move),
            );
    }
}
