//! Movement: units walk their [`NavPath`]'s smoothed waypoints at speed x delta time, curve
//! through turns with a turning radius (Pinter), claim the next few cells, and handle other
//! units in the way (Lester's notes 1 and 2). Optional: a game with its own movement leaves
//! [`MovementPlugin`] out and reads the [`NavPath`]s itself.
//!
//! - `state`: what a unit is doing and its progress.
//! - `follow`: tracking, turn planning and advancing (pure).
//! - `crowd`: what a unit does about the unit in its way (pure).
//! - `neighbours`: the units of every map by cell, built once a frame.
//! - `avoid`: a moving unit's step turned aside for the units near (ORCA).
//! - `passage`: passages one cell wide, carrying one way at a time.
//! - `push`: overlapping bodies pushed apart after the frame's moves.

mod avoid;
mod crowd;
mod follow;
mod neighbours;
mod passage;
mod push;
mod state;

pub use state::{Errand, MoveState, PathProgress};

use bevy::prelude::*;

use crate::core::{Body, Cell, NavGrid, cells_around, fmath, overlaps_blocked, walkable};

use super::agent::NavAgent;
use super::claims::{Claims, Intent};
use super::lockstep::{LockstepKey, lockstep_order};
use super::map::NavMap;
use super::outcomes::NavPath;
use super::request::{
    PathGoal, PathOrigin, PathRequest, PathStatus, PendingRequests, SubmitInternal,
};
use super::schedule::{TilepathSchedule, TilepathSystems};
use super::settings::{CrowdSettings, TilepathSettings};

use avoid::avoid;
use crowd::{Action, InTheWay, Reaction, Situation, decide};
use follow::{Walk, track};
use neighbours::{Member, Neighbours};

/// Makes a unit follow its [`NavPath`]. Speeds and distances are in tiles; the body's radius is
/// its [`NavAgent`]'s.
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

/// How far (in steps) a unit meeting another head-on looks for a cell to step aside to.
const STEP_ASIDE_REACH: u32 = 16;

/// A unit that avoidance lets go on less than this share of its step is held back by the crowd
/// (its time counts as waiting, toward the crowd's last resorts).
const HELD_BACK: f32 = 0.1;

/// Seconds in which a push's offset from a unit's curve fades to a third (see
/// [`PathProgress`]'s `offset`).
const OFFSET_FADE: f32 = 0.5;

/// How far (tiles) a unit pressed back by the crowd may fall behind the point of its curve before
/// that point waits for it (see [`PathProgress`]'s `offset`): it never runs on ahead through a
/// gap the body has not reached.
const TETHER: f32 = 1.0;

/// How far (in steps) a unit whose goal is taken looks for a free cell.
const FREE_CELL_REACH: u32 = 12;

/// A unit reached the end of its path: a [`Message`] and an [`EntityEvent`].
#[derive(Message, EntityEvent, Clone, Copy, Debug, PartialEq, Reflect)]
pub struct Arrived {
    /// The unit.
    pub entity: Entity,
    /// The cell it stopped on.
    pub cell: Cell,
}

/// Moves units with a [`Mover`] along their paths, with claims and crowd handling; part of
/// [`TilepathPlugins`](crate::TilepathPlugins).
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
            .init_resource::<PendingRequests>()
            .add_message::<Arrived>()
            .register_type::<Mover>()
            .register_type::<PathProgress>()
            .register_type::<MoveState>()
            .register_type::<Errand>()
            .register_type::<Arrived>()
            .init_resource::<MoverOrder>()
            .add_systems(
                schedule,
                (release_departed, order_movers, move_units, push::push_apart)
                    .chain()
                    .in_set(TilepathSystems::Move),
            );
    }
}

/// In lockstep mode, the movers in their lockstep order, sorted once a tick for the movement
/// systems (claims, errands, repaths and pushes go to the first to ask); empty otherwise.
#[derive(Resource, Default)]
pub(crate) struct MoverOrder(pub(crate) Vec<Entity>);

/// Sorts the movers into [`MoverOrder`] (lockstep mode only).
fn order_movers(
    settings: Res<TilepathSettings>,
    keys: Query<(Entity, Option<&LockstepKey>), With<Mover>>,
    mut order: ResMut<MoverOrder>,
) {
    if settings.lockstep.is_some() {
        lockstep_order(keys.iter(), &mut order.0);
    } else {
        order.0.clear();
    }
}

/// What the movement system shares between units in one frame.
struct Ctx<'a, 'w, 's> {
    claims: &'a mut Claims,
    book: &'a PendingRequests,
    crowd: &'a CrowdSettings,
    commands: Commands<'w, 's>,
    arrived: MessageWriter<'w, Arrived>,
    dt: f32,
    /// Seconds since the app started (one-way passages take turns by it).
    clock: f32,
    /// The units by cell as they stood at the frame's start, with local avoidance on.
    neighbours: Option<&'a Neighbours>,
    /// Neighbours' bodies, reused from unit to unit.
    scratch: Vec<Body>,
    /// A unit's path's corridor (read when a unit steps aside for another).
    corridor_of: &'a dyn Fn(Entity) -> Vec<Cell>,
}

impl Ctx<'_, '_, '_> {
    /// Asks for a search of the plugin's own for `entity` (its [`PathRequest`] stays as it is).
    fn submit(&mut self, entity: Entity, request: PathRequest, origin: PathOrigin) {
        self.commands.queue(SubmitInternal {
            entity,
            request,
            origin,
        });
    }
}

/// One unit's view of this frame.
struct Unit<'a> {
    entity: Entity,
    mover: &'a Mover,
    /// The body's radius (against other units).
    radius: f32,
    /// The body's radius against the walls of `grid` (grown by the class's footprint, so
    /// smaller; see [`MoveClass::wall_radius`](crate::core::MoveClass::wall_radius)).
    wall_radius: f32,
    map_entity: Entity,
    map: &'a NavMap,
    /// The grid of the unit's class on `map` (the one its path was planned on).
    grid: &'a NavGrid,
    /// Its class's footprint: rings of cells its body covers around its own.
    footprint: u8,
    /// A version that changes with every edit of `grid` (the shared grid's under fog of war:
    /// what the unit's player sees changes its grid every frame, and a wall seen across its
    /// way repaths it).
    edits_version: u64,
    path: &'a NavPath,
    status: PathStatus,
}

/// The units [`move_units`] moves.
type Units<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        &'static Mover,
        &'static NavAgent,
        &'static mut Transform,
        Ref<'static, NavPath>,
        &'static mut PathProgress,
        &'static PathStatus,
    ),
>;

/// One of [`Units`].
type UnitItem<'a> = (
    Entity,
    &'a Mover,
    &'a NavAgent,
    Mut<'a, Transform>,
    Ref<'a, NavPath>,
    Mut<'a, PathProgress>,
    &'a PathStatus,
);

/// Follows paths: advances units, updates claims and occupancy, handles units in the way.
pub(crate) fn move_units(
    time: Res<Time>,
    settings: Res<TilepathSettings>,
    mut claims: ResMut<Claims>,
    book: Res<PendingRequests>,
    maps: Query<&NavMap>,
    mut units: Units,
    commands: Commands,
    arrived: MessageWriter<Arrived>,
    mut index: Local<Neighbours>,
    paths: Query<&NavPath>,
    order: Res<MoverOrder>,
) {
    // In lockstep mode units are indexed and moved in their lockstep order.
    let lockstep = settings.lockstep.is_some();
    if settings.crowd.avoidance {
        index_units(&mut index, &maps, &units, lockstep.then_some(&order.0));
    }
    let mut ctx = Ctx {
        claims: &mut claims,
        book: &book,
        crowd: &settings.crowd,
        commands,
        arrived,
        dt: time.delta_secs(),
        clock: time.elapsed_secs(),
        neighbours: settings.crowd.avoidance.then_some(&*index),
        scratch: Vec::new(),
        corridor_of: &|e| paths.get(e).map(|p| p.corridor.clone()).unwrap_or_default(),
    };
    if lockstep {
        let mut iter = units.iter_many_mut(&order.0);
        while let Some(item) = iter.fetch_next() {
            move_one(&mut ctx, &maps, item);
        }
    } else {
        for item in &mut units {
            move_one(&mut ctx, &maps, item);
        }
    }
}

/// Moves one unit along its path (see [`move_units`]).
fn move_one(ctx: &mut Ctx, maps: &Query<&NavMap>, item: UnitItem) {
    let (entity, mover, agent, mut transform, path, mut progress, status) = item;
    let Ok(map) = maps.get(path.map) else {
        return;
    };
    let (wall_radius, footprint, fog) = match map.class_grid(path.class) {
        Some(Ok(c)) => (
            c.class().wall_radius(agent.radius),
            c.class().footprint,
            c.knowledge().is_some(),
        ),
        _ => (agent.radius, 0, false),
    };
    let grid = map.grid_of(path.class);
    let unit = Unit {
        entity,
        mover,
        radius: agent.radius,
        wall_radius,
        map_entity: path.map,
        map,
        grid,
        footprint,
        edits_version: if fog {
            map.grid().version()
        } else {
            grid.version()
        },
        path: &path,
        status: *status,
    };
    let pos = map.world_to_grid(transform.translation.truncate());
    let progress = &mut *progress;
    if path.is_changed() {
        start_path(ctx, &unit, progress, pos);
    }
    let Some((pos, heading)) = step_unit(ctx, &unit, progress, pos, path.is_changed()) else {
        return;
    };
    transform.translation = map.grid_to_world(pos).extend(transform.translation.z);
    let facing = map.grid_to_world_dir(heading);
    transform.rotation = fmath::rotation_toward(facing);
}

/// The units as they stand at the frame's start, by cell, with their velocities (in `order`
/// where it is given: lockstep mode).
fn index_units(
    index: &mut Neighbours,
    maps: &Query<&NavMap>,
    units: &Units,
    order: Option<&[Entity]>,
) {
    index.clear();
    let items: Box<dyn Iterator<Item = _>> = match order {
        Some(order) => Box::new(units.iter_many(order)),
        None => Box::new(units.iter()),
    };
    for (entity, mover, agent, transform, path, progress, _) in items {
        let Some(map) = progress.map else { continue };
        let Ok(nav) = maps.get(map) else { continue };
        let speed = match progress.state {
            MoveState::Moving | MoveState::WalkingThrough { .. } => {
                mover.speed * progress.speed_factor
            }
            _ => 0.0,
        };
        index.add(Member {
            entity,
            map,
            class: path.class,
            body: Body {
                position: nav.world_to_grid(transform.translation.truncate()),
                velocity: progress.heading * speed,
                radius: agent.radius,
            },
        });
    }
    index.build(|map| {
        maps.get(map)
            .ok()
            .map(|m| m.grid().extent().ceil().as_uvec2())
    });
}

/// A new path: start on it (a one-waypoint path arrives at once, with its message).
fn start_path(ctx: &mut Ctx, unit: &Unit, progress: &mut PathProgress, pos: Vec2) {
    release_all(ctx.claims, unit.entity, progress);
    let old_map = progress
        .map
        .replace(unit.map_entity)
        .unwrap_or(unit.map_entity);
    ctx.claims
        .set_stopped(old_map, unit.entity, progress.stopped_cell.take(), None, 0);
    if old_map != unit.map_entity {
        ctx.claims
            .set_moving_at(old_map, unit.entity, progress.moving_cell.take(), None);
    }
    progress.waypoint = 1;
    progress.cell_index = 1;
    progress.leg = None;
    progress.speed_factor = 1.0;
    progress.state = match progress.state.walking_through_from() {
        _ if unit.path.waypoints.is_empty() => MoveState::Arrived,
        // A repath while walking through others keeps walking through.
        Some(from) => MoveState::WalkingThrough { from },
        None => MoveState::Moving,
    };
    // A new order given while the unit stepped aside or made way replaces those.
    if !on_errand(ctx.book, unit, &progress.errand) {
        progress.errand = Errand::None;
    }
    if progress.heading == Vec2::ZERO {
        progress.heading = Vec2::X;
    }
    let cells = &unit.path.corridor;
    let count = unit.path.waypoints.len();
    if count > 1 && !walkable(unit.grid, pos, grid_waypoint(unit, 1), unit.wall_radius) {
        // Smoothing assumed the start cell's center: go there first if the unit stands
        // elsewhere in it and cannot see the next waypoint.
        progress.waypoint = 0;
    }
    if let Some(&goal) = cells.last()
        && progress.goal != Some(goal)
    {
        progress.goal = Some(goal);
        progress.closest = pos.distance(unit.grid.cell_center(goal));
    }
}

/// The path's waypoint `i` in grid space.
fn grid_waypoint(unit: &Unit, i: usize) -> Vec2 {
    unit.map.world_to_grid(unit.path.waypoints[i])
}

/// One frame of one unit: its new position and heading, or `None` if it does not move.
fn step_unit(
    ctx: &mut Ctx,
    unit: &Unit,
    progress: &mut PathProgress,
    pos: Vec2,
    new_path: bool,
) -> Option<(Vec2, Vec2)> {
    let pending = unit.status != PathStatus::Found;
    if pending && unit.status != PathStatus::Queued && progress.state.is_underway() {
        // Failed or cancelled requests stop the unit where it is.
        progress.state = MoveState::Idle;
        release_all(ctx.claims, unit.entity, progress);
    }
    let here = unit.grid.cell_at(pos);
    if !progress.state.is_underway() {
        stand(ctx, unit, progress, here);
        return None;
    }
    let next = keep_track(ctx, unit, progress, pos, here, new_path);
    let goal = progress.goal.expect("set with the path");
    let corridor = &unit.path.corridor;
    let passage_closed = next.is_some_and(|c| c != here)
        && passage::passage_closed(
            ctx.claims,
            unit.grid,
            unit.map_entity,
            unit.entity,
            here,
            corridor.get(progress.cell_index..).unwrap_or_default(),
            unit.mover.speed,
            ctx.clock,
            ctx.crowd.one_way_turn,
        );
    let situation = Situation {
        held_back: progress.leg.is_some() && held_back(progress),
        stalled: progress.stalled,
        passage_closed,
        in_the_way: next
            .filter(|&c| c != here)
            .and_then(|next| in_the_way(ctx.claims, unit, here, next, goal)),
        waited: progress.state.waited() + ctx.dt,
        wait_time: unit.mover.wait_time,
        blocked: progress.blocked,
        walking_through: progress.state.walking_through_from().is_some(),
        near_goal: unit.grid.open_steps(here, goal) as i32 <= ctx.crowd.close_enough,
        free_here: ctx
            .claims
            .stopped_at(unit.map_entity, here)
            .is_none_or(|e| e == unit.entity),
        pending,
        stuck_repaths: progress.stuck_repaths,
        making_way: matches!(progress.errand, Errand::MakingWay { .. }),
        yields: progress.yields,
    };
    match decide(&situation, ctx.crowd) {
        Action::StopHere => {
            stop_here(ctx, unit, progress, here);
            None
        }
        Action::Wait {
            ask_to_make_way,
            then,
        } => {
            progress.state = progress.state.wait(situation.waited);
            progress.patient = situation.patient();
            if let Some(idle) = ask_to_make_way {
                ctx.claims.ask_to_make_way(idle, unit.entity);
            }
            if let Some(reaction) = then {
                react(ctx, unit, progress, here, goal, reaction);
            }
            None
        }
        Action::Go {
            start_walking_through,
        } => {
            progress.patient = false;
            progress.state = if start_walking_through {
                MoveState::WalkingThrough { from: pos }
            } else {
                progress.state.go()
            };
            Some(walk(ctx, unit, progress, pos, pending))
        }
    }
}

/// Tracks the unit along its corridor (passed cells, progress toward the goal, the end of
/// walking through), keeps its claims, occupancy and intent up to date; returns its next cell.
fn keep_track(
    ctx: &mut Ctx,
    unit: &Unit,
    progress: &mut PathProgress,
    pos: Vec2,
    here: Cell,
    new_path: bool,
) -> Option<Cell> {
    let (entity, map) = (unit.entity, unit.map_entity);
    let cells = &unit.path.corridor;
    // Passed cells (only when the unit entered another cell or got a new path: with thousands
    // of units, reading each one's path every frame is what costs, in cache misses).
    let index_before = progress.cell_index;
    if new_path || progress.moving_cell != Some(here) {
        progress.cell_index = track(cells, progress.cell_index, here);
    }
    let retrack = new_path || progress.cell_index != index_before;
    if new_path || pos.distance_squared(progress.stall_anchor) > 1.0 {
        progress.stalled = 0.0;
        progress.stall_anchor = pos;
    } else {
        progress.stalled += ctx.dt;
    }
    if new_path {
        progress.end = grid_waypoint(unit, unit.path.waypoints.len() - 1);
    }
    if retrack {
        progress.next = cells.get(progress.cell_index).copied();
    }
    let next = progress.next;
    // Progress is getting closer to the goal than ever before on this order: walking back and
    // forth between two routes in a crowd is not.
    let goal = progress.goal.expect("set with the path");
    let to_goal = pos.distance(unit.grid.cell_center(goal));
    let closer = to_goal < progress.closest - 1.0;
    if closer {
        progress.closest = to_goal;
    }
    let next_taken = next.is_some_and(|c| {
        ctx.claims.stopped_at(map, c).is_some_and(|e| e != entity)
            || ctx.claims.moving_at(map, c).is_some_and(|e| e != entity)
    });
    let walked_through = progress
        .state
        .walking_through_from()
        .map(|from| pos.distance(from) >= ctx.crowd.walk_through_for && !next_taken);
    if closer && walked_through.is_none() || walked_through == Some(true) {
        progress.blocked = 0.0;
        progress.stuck_repaths = 0;
        progress.state = progress.state.stop_walking_through();
    }
    if retrack {
        update_claims(ctx.claims, unit, progress);
    }
    if progress.moving_cell != Some(here) {
        ctx.claims
            .set_moving_at(map, entity, progress.moving_cell, Some(here));
        progress.moving_cell = Some(here);
    }
    let waiting = progress.state.waited() > 0.0;
    if waiting {
        progress.blocked += ctx.dt;
    }
    let intent = Intent {
        here,
        next,
        waiting,
        patient: waiting && progress.patient,
    };
    publish_intent(ctx.claims, entity, progress, Some(intent));
    next
}

/// Walks the unit along its waypoints for this frame (a new path if even its cell center cannot
/// see the next waypoint) and arrives at the end; returns its position and heading.
fn walk(
    ctx: &mut Ctx,
    unit: &Unit,
    progress: &mut PathProgress,
    pos: Vec2,
    pending: bool,
) -> (Vec2, Vec2) {
    // A grid edit since the leg was planned: plan it again from here, so a unit never walks on
    // into a wall dropped across its leg (it stops short of it if the new grid blocks its way,
    // and waits there for its new path).
    let version = unit.edits_version;
    if progress.grid_version != version {
        progress.grid_version = version;
        progress.leg = None;
    }
    // Pushed off its curve: it walks the curve with the push's offset, fading (a new curve
    // starts where the unit is).
    if progress.leg.is_none() {
        progress.offset = Vec2::ZERO;
    }
    let mut on_curve = pos - progress.offset;
    let waypoint = |i: usize| grid_waypoint(unit, i);
    let walk = Walk {
        grid: unit.grid,
        waypoints: &waypoint,
        waypoint_count: unit.path.waypoints.len(),
        radius: unit.wall_radius,
        turning_radius: unit.mover.turning_radius,
        corridor: &unit.path.corridor,
        cell_index: progress.cell_index,
    };
    let distance = unit.mover.speed * ctx.dt;
    // Pushed ahead of the point of its curve: the point catches up (the push was progress),
    // and the offset is what is left.
    let ahead = progress.offset.dot(progress.heading);
    if ahead > 0.0 {
        let time = ahead / progress.speed_factor.max(1e-3);
        on_curve = walk
            .advance(
                &mut progress.waypoint,
                &mut progress.leg,
                &mut progress.speed_factor,
                on_curve,
                progress.heading,
                time,
            )
            .pos;
        progress.offset = pos - on_curve;
    }
    // Pressed back more than TETHER behind it: the point waits for the body (and the time
    // counts as waiting, toward the crowd's last resort).
    let tethered = held_back(progress);
    if tethered {
        progress.blocked += ctx.dt;
    }
    let along_curve = if tethered { 0.0 } else { distance };
    let mut walked = None;
    if progress.state == MoveState::Moving
        && let Some(index) = ctx.neighbours
    {
        // The step along the curve, tried on a copy, then turned aside for the units near.
        let (mut waypoint, mut leg, mut factor) =
            (progress.waypoint, progress.leg, progress.speed_factor);
        let step = walk.advance(
            &mut waypoint,
            &mut leg,
            &mut factor,
            on_curve,
            progress.heading,
            along_curve,
        );
        let me = Body {
            position: pos,
            velocity: progress.heading * unit.mover.speed * progress.speed_factor,
            radius: unit.radius,
        };
        let avoided = (!step.blocked)
            .then(|| {
                avoid(
                    index,
                    ctx.crowd,
                    // Walls as they are (the real radius), not grown by a class's footprint.
                    unit.map.grid(),
                    unit.map_entity,
                    unit.entity,
                    me,
                    step.pos - on_curve,
                    unit.mover.speed,
                    ctx.dt,
                    &mut ctx.scratch,
                )
            })
            .flatten();
        progress.avoidance = avoided.map(|a| a.velocity);
        match avoided {
            None => {
                (progress.waypoint, progress.leg, progress.speed_factor) = (waypoint, leg, factor);
                walked = Some(step);
            }
            Some(a) => {
                progress.offset += a.aside;
                if a.along < HELD_BACK {
                    // Held back by the crowd: as good as waiting for it.
                    progress.blocked += ctx.dt;
                }
                walked = Some(walk.advance(
                    &mut progress.waypoint,
                    &mut progress.leg,
                    &mut progress.speed_factor,
                    on_curve,
                    progress.heading,
                    along_curve * a.along,
                ));
            }
        }
    } else {
        progress.avoidance = None;
    }
    let mut walked = walked.unwrap_or_else(|| {
        walk.advance(
            &mut progress.waypoint,
            &mut progress.leg,
            &mut progress.speed_factor,
            on_curve,
            progress.heading,
            along_curve,
        )
    });
    if tethered {
        walked.pos = catch_up(unit, progress, pos, distance);
    } else if progress.offset != Vec2::ZERO {
        walked.pos = pushed_off(unit, progress, pos, walked.pos, ctx.dt);
    }
    // Stopped short of a wall edited across its way: it searches again, ahead of every other
    // request (a repath after the edit still waiting for its turn gives way to this one).
    let repath_waiting = matches!(
        ctx.book.origin(unit.entity),
        Some(PathOrigin::GridEdit | PathOrigin::Revealed)
    );
    if walked.blocked && (!pending || repath_waiting) {
        ctx.submit(unit.entity, unit.path.request.clone(), PathOrigin::Blocked);
        progress.state = progress.state.wait(0.0);
    }
    progress.heading = walked.heading;
    if progress.waypoint >= unit.path.waypoints.len()
        || walked.pos.distance(progress.end) <= unit.mover.arrival_tolerance
    {
        arrive(ctx, unit, progress, unit.grid.cell_at(walked.pos), pending);
    }
    (walked.pos, walked.heading)
}

/// Where a unit pushed off its curve stands when the curve puts it at `on_curve`: its offset
/// faded by this frame's walk (or, if that would put the body on a blocked cell, kept). If both
/// would, its curve is given up where it stands, at `pos`, and a new one starts there next frame:
/// a body never jumps onto its curve.
fn pushed_off(
    unit: &Unit,
    progress: &mut PathProgress,
    pos: Vec2,
    on_curve: Vec2,
    dt: f32,
) -> Vec2 {
    let faded = progress.offset * fmath::exp(-dt / OFFSET_FADE);
    for offset in [faded, progress.offset] {
        let at = on_curve + offset;
        if !overlaps_blocked(unit.grid, at, unit.wall_radius) {
            progress.offset = offset;
            return at;
        }
    }
    start_again_at(progress, pos)
}

/// Whether the unit's body is held back more than [`TETHER`] behind the point of its curve.
fn held_back(progress: &PathProgress) -> bool {
    progress.offset.dot(progress.heading) < -TETHER
}

/// A unit pressed back more than [`TETHER`] off its curve (whose point waits for it) walks
/// toward that point; if a wall is in the way, its curve is given up and starts again at `pos`.
fn catch_up(unit: &Unit, progress: &mut PathProgress, pos: Vec2, distance: f32) -> Vec2 {
    let step = (-progress.offset).clamp_length_max(distance);
    let at = pos + step;
    if overlaps_blocked(unit.grid, at, unit.wall_radius) {
        return start_again_at(progress, pos);
    }
    progress.offset += step;
    at
}

/// Gives up the unit's curve: it stays at `pos`, and its next leg is planned from there.
fn start_again_at(progress: &mut PathProgress, pos: Vec2) -> Vec2 {
    progress.offset = Vec2::ZERO;
    progress.leg = None;
    pos
}

/// The unit in `next` (not this one), as the crowd decision sees it.
fn in_the_way(
    claims: &Claims,
    unit: &Unit,
    here: Cell,
    next: Cell,
    goal: Cell,
) -> Option<InTheWay> {
    let map = unit.map_entity;
    if let Some(other) = claims.stopped_at(map, next).filter(|&e| e != unit.entity) {
        return Some(InTheWay::Stopped {
            unit: other,
            on_goal: next == goal,
            wedged: unit.grid.is_one_wide(next),
        });
    }
    let other = claims.moving_at(map, next).filter(|&e| e != unit.entity)?;
    let theirs = claims.intent(other);
    // A unit waiting at a one-way passage's end for this one to come out stands aside for it
    // (with pushing, it is shoved out of the way like a stopped unit).
    if theirs.is_some_and(|t| t.patient && t.next == Some(here)) {
        return Some(InTheWay::Stopped {
            unit: other,
            on_goal: next == goal,
            wedged: false,
        });
    }
    Some(InTheWay::Moving {
        unit: other,
        head_on: theirs.is_some_and(|t| t.next == Some(here)),
        waits: theirs.is_some_and(|t| t.waiting),
        patient: theirs.is_some_and(|t| t.patient),
        passable: !unit.grid.is_one_wide(here) && !unit.grid.is_one_wide(next),
        we_yield: unit.entity > other,
    })
}

/// Carries out a waiting unit's reaction.
fn react(
    ctx: &mut Ctx,
    unit: &Unit,
    progress: &mut PathProgress,
    here: Cell,
    goal: Cell,
    reaction: Reaction,
) {
    let entity = unit.entity;
    let request = unit.path.request.clone();
    let (request, origin) = match reaction {
        Reaction::Repath => (request, PathOrigin::Stuck),
        Reaction::TakeFreeCell => match free_cell_near(ctx.claims, unit, goal) {
            Some(free) => (redirect(progress, request, free), PathOrigin::GoalTaken),
            None => {
                progress.state = MoveState::Arrived;
                return;
            }
        },
        Reaction::StepAside { for_unit } => {
            // Onto the nearest cell off the other's path (in a corridor one tile wide: out of
            // it, not just out of the cells it claims, or they meet again a few cells on), then
            // resume the order.
            let map = unit.map_entity;
            let claims = &*ctx.claims;
            let their_path = (ctx.corridor_of)(for_unit);
            let Some(side) = nearest_cell(unit.grid, here, STEP_ASIDE_REACH, |c| {
                !claims.claimants(map, c).contains(&for_unit)
                    && !their_path.contains(&c)
                    && claims.stopped_at(map, c).is_none()
                    && claims.moving_at(map, c).is_none()
            }) else {
                return;
            };
            let resume = match std::mem::take(&mut progress.errand) {
                Errand::SteppingAside { resume, .. } => resume,
                _ => request,
            };
            progress.errand = Errand::SteppingAside { to: side, resume };
            progress.yields += 1;
            let trip = PathRequest::to_cell(side).with_priority(ctx.crowd.errand_priority);
            ctx.submit(entity, trip, PathOrigin::StepAside);
            progress.state = progress.state.wait(ctx.dt);
            return;
        }
    };
    progress.stuck_repaths += 1;
    progress.state = progress.state.wait(ctx.dt);
    ctx.submit(entity, request, origin);
}

/// The end of the path: stop, or, if another unit got there first, take the nearest free cell
/// instead of stacking.
fn arrive(ctx: &mut Ctx, unit: &Unit, progress: &mut PathProgress, cell: Cell, pending: bool) {
    let taken = ctx
        .claims
        .stopped_at(unit.map_entity, cell)
        .is_some_and(|e| e != unit.entity);
    if taken
        && !pending
        && let Some(free) = free_cell_near(ctx.claims, unit, cell)
    {
        let request = redirect(progress, unit.path.request.clone(), free);
        progress.state = progress.state.wait(ctx.dt);
        ctx.submit(unit.entity, request, PathOrigin::GoalTaken);
        return;
    }
    stop_here(ctx, unit, progress, cell);
}

/// An idle or arrived unit: occupies its cell, and makes way if asked.
fn stand(ctx: &mut Ctx, unit: &Unit, progress: &mut PathProgress, here: Cell) {
    let (entity, map) = (unit.entity, unit.map_entity);
    publish_intent(ctx.claims, entity, progress, None);
    if progress.stopped_cell != Some(here) {
        ctx.claims
            .set_moving_at(map, entity, progress.moving_cell.take(), None);
        ctx.claims.set_stopped(
            map,
            entity,
            progress.stopped_cell,
            Some(here),
            unit.footprint,
        );
        progress.stopped_cell = Some(here);
    }
    // Asked to make way: step onto the nearest cell nobody stands on or claims (off the asking
    // unit's claimed cells) and stay there.
    if ctx.claims.take_make_way(entity).is_some() && unit.status != PathStatus::Queued {
        let claims = &*ctx.claims;
        let free = nearest_cell(unit.grid, here, ctx.crowd.make_way_reach, |c| {
            claims.stopped_at(map, c).is_none()
                && claims.moving_at(map, c).is_none()
                && claims.claimants(map, c).is_empty()
        });
        if let Some(free) = free {
            progress.errand = Errand::MakingWay { to: free };
            let trip = PathRequest::to_cell(free).with_priority(ctx.crowd.errand_priority);
            ctx.submit(entity, trip, PathOrigin::MakeWay);
        }
    }
}

/// Claims: the current and next few cells of the corridor, never the ones left behind (for a
/// wide unit, every cell its footprint covers on them).
fn update_claims(claims: &mut Claims, unit: &Unit, progress: &mut PathProgress) {
    let cells = &unit.path.corridor;
    let lo = progress.cell_index.saturating_sub(1);
    let hi = (progress.cell_index + unit.mover.claim_ahead).min(cells.len());
    let mut window: &[Cell] = &cells[lo.min(hi)..hi];
    let grown;
    if unit.footprint > 0 {
        let mut cells: Vec<Cell> = window
            .iter()
            .flat_map(|&c| cells_around(c, unit.footprint))
            .collect();
        cells.sort_by_key(|c| (c.y, c.x));
        cells.dedup();
        grown = cells;
        window = &grown;
    }
    while progress
        .claimed
        .front()
        .is_some_and(|c| !window.contains(c))
    {
        let c = progress.claimed.pop_front().expect("non-empty");
        claims.release(unit.map_entity, c, unit.entity);
    }
    for &c in window {
        if !progress.claimed.contains(&c) {
            claims.claim(unit.map_entity, c, unit.entity);
            progress.claimed.push_back(c);
        }
    }
}

/// Tells `claims` where the unit is and goes, if that changed since it last did.
fn publish_intent(
    claims: &mut Claims,
    entity: Entity,
    progress: &mut PathProgress,
    intent: Option<Intent>,
) {
    if progress.intent != intent {
        progress.intent = intent;
        claims.set_intent(entity, intent);
    }
}

fn release_all(claims: &mut Claims, entity: Entity, progress: &mut PathProgress) {
    let Some(map) = progress.map else {
        progress.claimed.clear();
        return;
    };
    for c in progress.claimed.drain(..) {
        claims.release(map, c, entity);
    }
}

/// The nearest walkable cell around `from`, other than `from` (breadth-first, within
/// `max_steps`), that `ok` accepts.
fn nearest_cell(
    grid: &NavGrid,
    from: Cell,
    max_steps: u32,
    ok: impl Fn(Cell) -> bool,
) -> Option<Cell> {
    grid.cells_outward(from, max_steps).skip(1).find(|&c| ok(c))
}

/// Whether `request` is an order to go to `cell` (a step-aside or make-way trip).
fn heading_to(request: &PathRequest, cell: Cell) -> bool {
    match request.goal {
        PathGoal::Cell(c) | PathGoal::Slot { slot: c, .. } => c == cell,
        _ => false,
    }
}

/// Whether the unit is still on `errand`: its latest request (the one waiting for an outcome,
/// or the one its path answers) goes to the errand's cell (a new order replaces the errand).
fn on_errand(book: &PendingRequests, unit: &Unit, errand: &Errand) -> bool {
    errand.cell().is_some_and(|c| {
        let latest = book.request(unit.entity).unwrap_or(&unit.path.request);
        heading_to(latest, c)
    })
}

/// The nearest cell around `cell` that no unit stands on or claims: where a unit whose goal is
/// taken goes instead.
fn free_cell_near(claims: &Claims, unit: &Unit, cell: Cell) -> Option<Cell> {
    let map = unit.map_entity;
    nearest_cell(unit.grid, cell, FREE_CELL_REACH, |c| {
        claims.stopped_at(map, c).is_none() && claims.claimants(map, c).is_empty()
    })
}

/// `request` sent to `free` instead of its goal (taken by a stopped unit); a unit stepping aside
/// steps aside to `free` instead.
fn redirect(progress: &mut PathProgress, mut request: PathRequest, free: Cell) -> PathRequest {
    if let Errand::SteppingAside { to, .. } = &mut progress.errand
        && heading_to(&request, *to)
    {
        *to = free;
    }
    request.goal = match request.goal {
        PathGoal::Slot { target, .. } => PathGoal::Slot { slot: free, target },
        _ => PathGoal::Cell(free),
    };
    request
}

/// The unit stops on `cell`: claims released, the cell occupied, [`Arrived`] sent (or the order
/// it stepped aside from resumed).
fn stop_here(ctx: &mut Ctx, unit: &Unit, progress: &mut PathProgress, cell: Cell) {
    let (entity, map) = (unit.entity, unit.map_entity);
    progress.state = MoveState::Arrived;
    progress.leg = None;
    progress.blocked = 0.0;
    progress.stuck_repaths = 0;
    release_all(ctx.claims, entity, progress);
    publish_intent(ctx.claims, entity, progress, None);
    ctx.claims
        .set_moving_at(map, entity, progress.moving_cell.take(), None);
    ctx.claims.set_stopped(
        map,
        entity,
        progress.stopped_cell,
        Some(cell),
        unit.footprint,
    );
    progress.stopped_cell = Some(cell);
    let on_errand = on_errand(ctx.book, unit, &progress.errand);
    match std::mem::take(&mut progress.errand) {
        Errand::SteppingAside { resume, .. } if on_errand => {
            ctx.submit(entity, resume, PathOrigin::Resume);
        }
        Errand::MakingWay { .. } if on_errand => {}
        _ => {
            progress.yields = 0;
            ctx.arrived.write(Arrived { entity, cell });
            ctx.commands.trigger(Arrived { entity, cell });
        }
    }
}

/// Releases the claims and occupancy of units that lost their mover.
pub(crate) fn release_departed(
    mut claims: ResMut<Claims>,
    mut removed: RemovedComponents<Mover>,
    mut progress: Query<&mut PathProgress>,
) {
    for entity in removed.read() {
        if let Ok(mut p) = progress.get_mut(entity) {
            release_all(&mut claims, entity, &mut p);
            p.intent = None; // forgotten below
        }
        // Despawned: its cells are found by scanning (rare).
        claims.forget_entity(entity);
    }
}
