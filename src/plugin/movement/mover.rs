//! A unit's movement settings ([`Mover`]), its arrival ([`Arrived`]), and the order movers are
//! handled in.

use bevy::prelude::*;

use crate::core::Cell;

use super::super::agent::NavAgent;
use super::super::settings::TilepathSettings;
use super::super::unit_order::{LockstepKey, lockstep_order};
use super::state::PathProgress;
use super::stats::{MovementFrameStats, Stopwatch};

/// Makes a unit follow its [`NavPath`](crate::NavPath). Speeds and distances are in tiles; the
/// body's radius is its [`NavAgent`]'s.
#[derive(Component, Clone, Debug, PartialEq, Reflect)]
#[require(Transform, PathProgress, NavAgent)]
#[reflect(Component)]
pub struct Mover {
    /// Tiles per second.
    pub speed: f32,
    /// Turning radius in tiles; 0 turns in place (infantry). See [`PathProgress`] for the
    /// fallbacks when an arc is impossible or would touch a wall.
    pub turning_radius: f32,
    /// Distance to the final waypoint counted as arrived.
    pub arrival_tolerance: f32,
    /// How many cells ahead a moving unit claims.
    pub claim_ahead: usize,
    /// Seconds to wait for a unit in the way before repathing or yielding.
    pub wait_time: f32,
}

impl Default for Mover {
    fn default() -> Self {
        Mover {
            speed: 4.0,
            turning_radius: 0.0,
            arrival_tolerance: 0.05,
            claim_ahead: 3,
            wait_time: 0.4,
        }
    }
}

/// A unit reached the end of its path: a [`Message`] and an [`EntityEvent`].
#[derive(Message, EntityEvent, Clone, Copy, Debug, PartialEq, Reflect)]
pub struct Arrived {
    /// The unit.
    pub entity: Entity,
    /// The cell it stopped on.
    pub cell: Cell,
}

/// In lockstep mode, the movers in their lockstep order for the movement systems (claims,
/// errands, repaths and pushes go to the first to ask), sorted again when movers come or go
/// or their keys change; empty otherwise.
#[derive(Resource, Default)]
pub(crate) struct MoverOrder(pub(crate) Vec<Entity>);

/// Movers that came, or whose [`LockstepKey`] came or changed, since the last tick.
type Reordered = Or<(Added<Mover>, Changed<LockstepKey>)>;

/// Keeps [`MoverOrder`] (lockstep mode only): sorted again only when a mover came or went or a
/// key changed. A standing army's order costs a look at its change ticks, not a sort of every
/// unit each tick.
pub(crate) fn order_movers(
    settings: Res<TilepathSettings>,
    keys: Query<(Entity, Option<&LockstepKey>), With<Mover>>,
    reordered: Query<(), (With<Mover>, Reordered)>,
    mut gone: RemovedComponents<Mover>,
    mut unkeyed: RemovedComponents<LockstepKey>,
    mut order: ResMut<MoverOrder>,
    mut stats: ResMut<MovementFrameStats>,
) {
    let watch = Stopwatch::start();
    // Both read every tick, so what they hold is this tick's.
    let changed = gone.read().count() + unkeyed.read().count() > 0;
    if settings.lockstep.is_none() {
        order.0.clear();
    } else if changed
        || settings.is_changed()
        || order.0.len() != keys.count()
        || !reordered.is_empty()
    {
        lockstep_order(keys.iter(), &mut order.0);
    }
    let (wall, cpu) = watch.stop();
    stats.release += wall;
    stats.cpu += cpu;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::settings::Lockstep;

    /// An app with only [`order_movers`], in lockstep mode.
    fn app() -> App {
        let mut app = App::new();
        app.insert_resource(TilepathSettings {
            lockstep: Some(Lockstep::default()),
            ..default()
        })
        .init_resource::<MoverOrder>()
        .init_resource::<MovementFrameStats>()
        .add_systems(Update, order_movers);
        app
    }

    fn order(app: &App) -> Vec<Entity> {
        app.world().resource::<MoverOrder>().0.clone()
    }

    /// The order sorted from scratch, as every tick once did.
    fn sorted(app: &mut App) -> Vec<Entity> {
        let mut q = app
            .world_mut()
            .query_filtered::<(Entity, Option<&LockstepKey>), With<Mover>>();
        let mut out = Vec::new();
        lockstep_order(q.iter(app.world()), &mut out);
        out
    }

    #[test]
    fn the_kept_order_follows_movers_coming_going_and_their_keys_changing() {
        let mut app = app();
        let a = app
            .world_mut()
            .spawn((Mover::default(), LockstepKey(5)))
            .id();
        let b = app
            .world_mut()
            .spawn((Mover::default(), LockstepKey(2)))
            .id();
        let c = app.world_mut().spawn(Mover::default()).id();
        app.update();
        assert_eq!(order(&app), vec![b, a, c]);
        app.update();
        assert_eq!(order(&app), sorted(&mut app), "nothing changed");
        app.world_mut().entity_mut(a).insert(LockstepKey(1));
        app.update();
        assert_eq!(order(&app), vec![a, b, c], "a key changed");
        app.world_mut().entity_mut(a).remove::<LockstepKey>();
        app.update();
        assert_eq!(order(&app), sorted(&mut app), "a key taken off");
        assert_eq!(order(&app)[0], b);
        app.world_mut().despawn(b);
        let d = app
            .world_mut()
            .spawn((Mover::default(), LockstepKey(0)))
            .id();
        app.update();
        assert_eq!(order(&app)[0], d, "one came, one went");
        assert_eq!(order(&app), sorted(&mut app));
        app.world_mut().entity_mut(d).remove::<Mover>();
        app.update();
        assert!(!order(&app).contains(&d), "a mover no more");
        assert_eq!(order(&app), sorted(&mut app));
    }
}
