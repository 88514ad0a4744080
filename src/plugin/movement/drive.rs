//! Vehicles driving: each [`Vehicle`]'s new path planned as legal turns (a [`DriveSearch`] kept
//! to a band round the path first, then the whole map; a leg at a time where the path crosses
//! links, see [`drive_links`](super::drive_links)), and the plan driven: its arcs slower,
//! its reversing pieces backward. Inline, the searches run on the main thread, a few thousand
//! states a frame among all vehicles in turn; with workers, on the async compute pool
//! ([`drive_workers`](super::drive_workers)).

use std::collections::VecDeque;

use bevy::ecs::entity::{EntityHashMap, EntityHashSet};
use bevy::prelude::*;

use crate::core::{
    Cell, CellOverlay, CostModel, DriveQuery, DriveSearch, DriveStep, NavGrid, Pose, VehicleModel,
    band_around, fmath, nearest_heading, overlaps_blocked,
};

use super::super::agent::NavAgent;
use super::super::claims::Claims;
use super::super::map::{GridSnapshot, NavMap};
use super::super::outcomes::NavPath;
use super::super::settings::{TilepathSettings, WorkerMode};
use super::super::unit_order::{LockstepKey, sort_key};
use super::drive_links::{enter_at, in_link, leg_goal};
use super::drive_workers::{DRIVES_PER_RUNNER, DriveEnd, DriveJob, DriveWorkers};
use super::mover::{Arrived, Mover};
use super::output::DesiredVelocity;
use super::state::{MoveState, PathProgress};
use super::stats::{MovementFrameStats, Stopwatch};
use super::vehicle::{DriveProgress, DriveSettings, DriveStatus, Vehicle};

/// Tiles a vehicle would rather drive round another vehicle standing in its way than through
/// it: its plan goes round where that is at most this much longer (round a tank in the open),
/// and through where it is not (a road one vehicle wide: it waits, then drives through).
const STANDING_DETOUR: f32 = 6.0;

/// Tiles a body may touch a wall by before a plan counts as blocked (the searches' own sampling
/// and rounding: a plan found on a grid always counts as clear on it).
const TOUCH: f32 = 0.02;

/// The vehicles [`drive_vehicles`] moves.
type Vehicles<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        &'static Mover,
        &'static Vehicle,
        &'static NavAgent,
        &'static mut Transform,
        Option<&'static NavPath>,
        &'static mut DriveProgress,
        Option<&'static mut DesiredVelocity>,
        Option<&'static LockstepKey>,
        &'static mut PathProgress,
    ),
>;

/// The vehicles waiting for a plan, and the search of the first.
#[derive(Default)]
pub(crate) struct Planner {
    search: DriveSearch,
    waiting: VecDeque<Entity>,
    /// The vehicle whose plan `search` is finding.
    active: Option<Active>,
    /// Models built, by their rules' bits (a vehicle's lattice is built once).
    models: Vec<VehicleModel>,
    /// With workers: the searches handed to them.
    workers: DriveWorkers,
    /// The stops chosen this frame, `(vehicle, map, cell)` (the frame's [`Bodies`] know those
    /// of the frames before).
    chosen: Vec<(Entity, Entity, Cell)>,
}

/// The search [`Planner::search`] runs inline.
struct Active {
    entity: Entity,
    map: Entity,
    /// The path (ticket) it plans for.
    ticket: Option<u64>,
    /// The grid as it was when the search began: the search runs on to its end on it however the
    /// map is edited meanwhile (a driving vehicle checks its plan against the edits).
    grid: GridSnapshot,
}

impl Planner {
    /// The vehicles waiting for a plan, planning or with a search on a worker.
    fn planned(&self) -> EntityHashSet {
        let active = self.active.as_ref().map(|a| a.entity);
        self.waiting
            .iter()
            .copied()
            .chain(active)
            .chain(self.workers.handed())
            .collect()
    }
}

/// Plans and drives every [`Vehicle`] (see the module docs).
#[allow(clippy::too_many_arguments)]
pub(crate) fn drive_vehicles(
    time: Res<Time>,
    settings: Res<TilepathSettings>,
    drive: Res<DriveSettings>,
    maps: Query<&NavMap>,
    mut vehicles: Vehicles,
    mut planner: Local<Planner>,
    mut arrived: MessageWriter<Arrived>,
    mut commands: Commands,
    mut claims: ResMut<Claims>,
    mut stats: ResMut<MovementFrameStats>,
) {
    let watch = Stopwatch::start();
    drive_all(
        (&time, &settings, &drive, &maps),
        &mut vehicles,
        &mut planner,
        &mut arrived,
        &mut commands,
        &mut claims,
    );
    let (wall, cpu) = watch.stop();
    stats.vehicles = wall;
    stats.cpu += cpu;
}

/// [`drive_vehicles`]'s work.
fn drive_all(
    (time, settings, drive, maps): (&Time, &TilepathSettings, &DriveSettings, &Query<&NavMap>),
    vehicles: &mut Vehicles,
    planner: &mut Planner,
    arrived: &mut MessageWriter<Arrived>,
    commands: &mut Commands,
    claims: &mut Claims,
) {
    if vehicles.is_empty() {
        return;
    }
    let dt = time.delta_secs();
    let bodies = Bodies::of_vehicles(
        maps,
        vehicles,
        settings.lockstep.is_some(),
        drive.look_ahead,
    );
    planner.chosen.clear();
    // A vehicle planning that the planner does not know of (a loaded game's) joins the line.
    let planned = planner.planned();
    // In lockstep mode vehicles go in their lockstep order, so they wait for plans in it.
    for body in &bodies.list {
        visit(
            body.entity,
            vehicles,
            (maps, &bodies, &planned, &mut planner.waiting),
            (arrived, commands, claims),
            dt,
        );
    }
    let fleet = (drive, &*claims, &bodies);
    match settings.workers {
        WorkerMode::Inline => plan(fleet, maps, vehicles, planner),
        WorkerMode::Async { max_in_flight } => {
            let ticks = settings
                .lockstep
                .as_ref()
                .map(|l| u64::from(l.worker_ticks));
            let runners = max_in_flight.max(1);
            plan_on_workers(fleet, maps, vehicles, planner, (runners, ticks));
        }
    }
    publish(maps, vehicles, claims);
}

/// One vehicle's frame: its path's changes noticed, its plan driven (or its link crossed), its
/// stopping point reached; it joins the planner's line (`waiting`) when it has to plan.
fn visit(
    entity: Entity,
    vehicles: &mut Vehicles,
    (maps, bodies, planned, waiting): (
        &Query<&NavMap>,
        &Bodies,
        &EntityHashSet,
        &mut VecDeque<Entity>,
    ),
    (arrived, commands, claims): (&mut MessageWriter<Arrived>, &mut Commands, &mut Claims),
    dt: f32,
) {
    let Ok((_, mover, vehicle, agent, mut transform, path, mut progress, desired, ..)) =
        vehicles.get_mut(entity)
    else {
        return;
    };
    let Some(path) = path else { return };
    let Ok(map) = maps.get(path.map) else {
        return;
    };
    if progress.crossing.is_some() {
        let out = (transform.as_mut(), desired);
        if in_link(
            (entity, path, map),
            &mut progress,
            out,
            (claims, commands),
            dt,
        ) {
            waiting.push_back(entity);
        }
        return;
    }
    let body = map.wall_radius_of(path.class, agent.radius);
    let (grid, reverses) = (map.grid_of(path.class), vehicle.reverse.is_some());
    if notice_changes(&mut progress, path, (grid, body, reverses))
        || progress.status == DriveStatus::Planning && !planned.contains(&entity)
    {
        waiting.push_back(entity);
    }
    if progress.status != DriveStatus::Driving {
        if let Some(mut d) = desired {
            d.velocity = Vec2::ZERO;
        }
        return;
    }
    let me = bodies.of(entity);
    let Some(stop) = drive_on(
        (map, bodies, me),
        (grid, body),
        (mover, vehicle),
        &mut progress,
        &mut transform,
        desired,
        dt,
    ) else {
        return;
    };
    let here = grid.cell_at(stop);
    if !progress.replan
        && enter_at(
            (entity, path, grid),
            (here, mover.speed),
            &mut progress,
            claims,
            commands,
        )
    {
        return;
    }
    let spot = Spot::of((claims, bodies, &[]), (path, map), entity);
    if at_stop(&spot, &mut progress, here, path.goal) {
        arrived.write(Arrived { entity, cell: here });
        commands.trigger(Arrived { entity, cell: here });
    } else {
        waiting.push_back(entity);
    }
}

/// Writes what the rest of the plugin reads of each vehicle: its [`MoveState`] and facing, and
/// the cells it stands or drives on in the claims.
fn publish(maps: &Query<&NavMap>, vehicles: &mut Vehicles, claims: &mut Claims) {
    for (entity, _, _, _, transform, path, progress, _, _, mut walk) in vehicles.iter_mut() {
        mirror(&progress, &mut walk);
        if let Some(path) = path
            && let Ok(map) = maps.get(path.map)
        {
            occupy(claims, (entity, path, map), &transform, &mut walk);
        }
    }
}

/// A vehicle at its plan's stopping point: it plans again (a new path, a changed map, or the
/// cell it stopped on taken by another vehicle meanwhile: the free cell nearest its path's
/// `goal` then) or it has arrived; whether it arrived. Where no cell near the goal is free, it
/// arrives where it stands, as infantry do.
fn at_stop(spot: &Spot, progress: &mut DriveProgress, here: Cell, goal: Cell) -> bool {
    if !progress.replan
        && spot.taken(here)
        && spot.free_near(goal, here).is_some_and(|free| free != here)
    {
        progress.replan = true;
        progress.tries = 0;
    }
    if progress.replan {
        progress.status = DriveStatus::Planning;
        false
    } else {
        progress.status = DriveStatus::Arrived;
        true
    }
}

/// Tells the claims where a vehicle stands (arrived: its cell and those its body covers, so
/// others take other goals and plan round it) or drives (its cell, as a moving unit's).
fn occupy(
    claims: &mut Claims,
    (entity, path, map): (Entity, &NavPath, &NavMap),
    transform: &Transform,
    walk: &mut Mut<PathProgress>,
) {
    let cell = map
        .grid()
        .cell_at(map.world_to_grid(transform.translation.truncate()));
    let footprint = match map.class_grid(path.class) {
        Some(Ok(c)) => c.class().footprint,
        _ => 0,
    };
    let (stopped, moving) = match walk.state {
        MoveState::Arrived | MoveState::Idle => (Some(cell), None),
        _ => (None, Some(cell)),
    };
    if walk.map != Some(path.map) {
        if let Some(old) = walk.map {
            claims.set_stopped(old, entity, walk.stopped_cell.take(), None, 0);
            claims.set_moving_at(old, entity, walk.moving_cell.take(), None);
        }
        walk.map = Some(path.map);
    }
    if walk.stopped_cell != stopped {
        claims.set_stopped(path.map, entity, walk.stopped_cell, stopped, footprint);
        walk.stopped_cell = stopped;
    }
    if walk.moving_cell != moving {
        claims.set_moving_at(path.map, entity, walk.moving_cell, moving);
        walk.moving_cell = moving;
    }
}

/// A new path (planned for at once if the vehicle stands, else from the next point of its plan it
/// can stop at), or the map edited under its plan; whether it waits for the planner now.
///
/// After an edit, a plan its body (`body` tiles) can still drive to its end is driven on. One an
/// edit blocked is planned again from the next point it can stop at; where the blocked stretch
/// comes first, the vehicle stops at once and plans from the point it passed last (it backs
/// there first), or, if it may not reverse, from its cell and nearest heading.
fn notice_changes(
    progress: &mut DriveProgress,
    path: &NavPath,
    (grid, body, reverses): (&NavGrid, f32, bool),
) -> bool {
    if progress.ticket != Some(path.ticket) {
        progress.ticket = Some(path.ticket);
        progress.leg_from = 0;
        progress.replan = true;
        progress.tries = 0;
        if progress.status != DriveStatus::Driving {
            progress.status = DriveStatus::Planning;
            return true;
        }
    }
    if progress.status != DriveStatus::Driving || progress.version == grid.version() {
        return false;
    }
    progress.version = grid.version();
    let (along, next) = (progress.along, progress.next_state().map(|(at, _)| at));
    let Some(plan) = progress.plan.as_ref() else {
        return false;
    };
    let radius = (body - TOUCH).max(0.0);
    let covered = progress
        .covered
        .get_or_insert_with(|| plan.cells_covered(radius));
    let Some(blocked) = covered.first_blocked(grid, along) else {
        return false;
    };
    if !progress.replan {
        progress.replan = true;
        progress.tries = 0;
    }
    if next.is_some_and(|at| at < blocked) {
        return false;
    }
    // It would drive into the wall before it could plan again: it stops, and backs if the way
    // back to the state it passed last is clear.
    let can_back = reverses
        && plan.state_before(along).is_some_and(|k| {
            covered
                .first_blocked(grid, plan.distances[k])
                .is_some_and(|b| b > along)
        });
    if !can_back {
        progress.set_plan(None);
        progress.along = 0.0;
    }
    progress.status = DriveStatus::Planning;
    true
}

/// Writes what the rest of the plugin and the game read of any mover, its [`MoveState`] and
/// facing, from a vehicle's drive.
fn mirror(progress: &DriveProgress, walk: &mut Mut<PathProgress>) {
    let state = match progress.status {
        // Standing for a plan, or for another vehicle in its way (pushes slide it then, see
        // `drive_on`).
        DriveStatus::Planning => MoveState::Waiting {
            seconds: 0.0,
            through_from: None,
        },
        DriveStatus::Driving if progress.blocked_by.is_some() => MoveState::Waiting {
            seconds: progress.waited,
            through_from: None,
        },
        DriveStatus::Driving => MoveState::Moving,
        DriveStatus::Arrived => MoveState::Arrived,
        DriveStatus::Idle | DriveStatus::NoWay => MoveState::Idle,
    };
    if walk.state != state {
        walk.state = state;
    }
    if let Some(pose) = progress
        .plan
        .as_ref()
        .and_then(|p| p.pose_at(progress.along))
        && walk.heading != pose.facing
    {
        walk.heading = pose.facing;
    }
}

/// The vehicles' bodies as they stood at the frame's start.
struct Bodies {
    /// In lockstep order in lockstep mode (the order vehicles are driven and wait for plans
    /// in), else in the query's.
    list: Vec<Body>,
    /// Where each vehicle is in `list`.
    index: EntityHashMap<usize>,
}

/// One vehicle's body.
struct Body {
    entity: Entity,
    map: Entity,
    /// Grid space.
    at: Vec2,
    radius: f32,
    /// The vehicle it waited for last frame.
    blocked_by: Option<Entity>,
    /// It waits: at the frame's start whether it waited last frame, then once driven this
    /// frame whether it waits now.
    waits: std::cell::Cell<bool>,
    /// Driving its plan, the way it travels (grid space); `None` when it stands.
    travel: Option<Vec2>,
    /// Driving its plan, where its body will be over the next
    /// [`DriveSettings::look_ahead`] seconds if it goes on (grid space, [`LOOK_STEPS`] points
    /// evenly apart in time): the ground it takes, unless it waits.
    ahead: Option<[Vec2; LOOK_STEPS]>,
    /// Planning or driving to its path's end, the cell it stops at.
    stop_at: Option<Cell>,
    /// Its place in the order of who goes first where two wait for each other (the earlier
    /// goes): its lockstep key in lockstep mode, else its entity.
    rank: (bool, u64, Entity),
}

impl Bodies {
    /// `look_ahead`: see [`DriveSettings::look_ahead`].
    fn of_vehicles(
        maps: &Query<&NavMap>,
        vehicles: &Vehicles,
        lockstep: bool,
        look_ahead: f32,
    ) -> Bodies {
        let mut list: Vec<Body> = vehicles
            .iter()
            .filter_map(
                |(entity, mover, vehicle, agent, transform, path, progress, _, key, _)| {
                    let path = path?;
                    let map = maps.get(path.map).ok()?;
                    let at = map.world_to_grid(transform.translation.truncate());
                    let rank = if lockstep {
                        let (keyless, k) = sort_key(entity, key);
                        (keyless, k, entity)
                    } else {
                        (false, 0, entity)
                    };
                    Some(Body {
                        entity,
                        map: path.map,
                        at,
                        radius: agent.radius,
                        blocked_by: progress.blocked_by,
                        waits: std::cell::Cell::new(progress.blocked_by.is_some()),
                        travel: travel_of(progress),
                        ahead: ahead_of(progress, (mover, vehicle), at, look_ahead),
                        stop_at: progress.stop_at.filter(|_| {
                            matches!(
                                progress.status,
                                DriveStatus::Planning | DriveStatus::Driving
                            )
                        }),
                        rank,
                    })
                },
            )
            .collect();
        if lockstep {
            list.sort_unstable_by_key(|b| b.rank);
        }
        let index = list
            .iter()
            .enumerate()
            .map(|(i, b)| (b.entity, i))
            .collect();
        Bodies { list, index }
    }

    /// The cells the bodies of the vehicles standing on `map` cover (but `me`'s), each with
    /// `overlay`: what a vehicle planning its drive makes of them.
    fn standing_cells(
        &self,
        map: Entity,
        me: Entity,
        overlay: CellOverlay,
    ) -> Vec<(Cell, CellOverlay)> {
        let mut cells = Vec::new();
        for b in self
            .list
            .iter()
            .filter(|b| b.map == map && b.entity != me && b.travel.is_none())
        {
            let reach = b.radius.ceil() as i32;
            let here = Cell::new(b.at.x.floor() as i32, b.at.y.floor() as i32);
            for dy in -reach..=reach {
                for dx in -reach..=reach {
                    let c = here + Cell::new(dx, dy);
                    let near = b.at.clamp(c.as_vec2(), c.as_vec2() + Vec2::ONE);
                    if near.distance(b.at) < b.radius {
                        cells.push((c, overlay));
                    }
                }
            }
        }
        cells
    }

    /// The vehicle driving (not waiting, see [`Body::waits`]; but `passing`) that `me`, driving
    /// too, waits for: the two would come closer and overlap within the look-ahead as both drive on. Of
    /// the two, the one whose stopping keeps them apart waits (the other's way does not cross
    /// where it stands); where either's or neither's would, the later in rank (and the other
    /// shoves it aside). Two going one way are left to `blocking` (the one behind follows).
    fn giving_way(&self, me: &Body, passing: Option<Entity>) -> Option<Entity> {
        let mine = me.ahead.as_ref()?;
        self.list
            .iter()
            .filter(|b| b.entity != me.entity && b.map == me.map && Some(b.entity) != passing)
            .filter(|b| !b.waits.get() && !same_way(me.travel, b.travel))
            .filter_map(|b| b.ahead.as_ref().map(|theirs| (b, theirs)))
            .find(|(b, theirs)| {
                let reach = me.radius + b.radius;
                let now = me.at.distance(b.at);
                let nearer = |p: Vec2, q: Vec2| {
                    let d = p.distance(q);
                    d < reach && d < now - 1e-4
                };
                if !mine.iter().zip(theirs.iter()).any(|(&p, &q)| nearer(p, q)) {
                    return false;
                }
                let clear_if_i_stop = !theirs.iter().any(|&q| nearer(me.at, q));
                let clear_if_it_stops = !mine.iter().any(|&p| nearer(p, b.at));
                if clear_if_i_stop != clear_if_it_stops {
                    clear_if_i_stop
                } else {
                    me.rank > b.rank
                }
            })
            .map(|(b, _)| b.entity)
    }

    fn of(&self, entity: Entity) -> Option<&Body> {
        self.index.get(&entity).map(|&i| &self.list[i])
    }

    fn contains(&self, entity: Entity) -> bool {
        self.index.contains_key(&entity)
    }

    /// The vehicle `me`, moving to `to`, would come closer to and overlap (but `passing`, the
    /// one it drives through), or one going its way on the very spot it stands on (two put down
    /// together at a link's exit) that is earlier in rank; where two wait for each other, the
    /// earlier in rank goes.
    fn blocking(&self, me: &Body, to: Vec2, passing: Option<Entity>) -> Option<Entity> {
        let way = (to - me.at).normalize_or_zero();
        self.list
            .iter()
            .filter(|b| b.entity != me.entity && b.map == me.map && Some(b.entity) != passing)
            .filter(|b| {
                let (d, d_to) = (me.at.distance(b.at), to.distance(b.at));
                // Only one going its way ahead of it: it follows; others it meets or passes
                // standing, it drives through.
                let ahead = b.travel.is_some_and(|t| t.dot(way) > 0.5);
                let closer = d_to < me.radius + b.radius && d_to < d - 1e-5;
                // On one spot neither comes closer: the later in rank lets the other go first.
                let same_spot = d < SAME_SPOT && me.rank > b.rank;
                ahead && (closer || same_spot)
            })
            .find(|b| !(b.blocked_by == Some(me.entity) && me.rank < b.rank))
            .map(|b| b.entity)
    }
}

/// Whether two vehicles travelling `a` and `b` (unit length, grid space) go one way.
fn same_way(a: Option<Vec2>, b: Option<Vec2>) -> bool {
    a.zip(b).is_some_and(|(a, b)| a.dot(b) > 0.5)
}

/// Two vehicles' bodies closer than this (tiles) stand on one spot (see [`Bodies::blocking`]).
const SAME_SPOT: f32 = 1e-3;

/// The way a vehicle driving its plan travels (grid space): against its facing in reverse.
fn travel_of(progress: &DriveProgress) -> Option<Vec2> {
    if progress.status != DriveStatus::Driving {
        return None;
    }
    let pose = progress.plan.as_ref()?.pose_at(progress.along)?;
    Some(if pose.reverse {
        -pose.facing
    } else {
        pose.facing
    })
}

/// Seconds a vehicle waits for another in its way, in [`Mover::wait_time`]s, before it drives
/// on through it.
const PATIENCE: f32 = 3.0;

/// Drives `progress`'s plan for the frame (unless another vehicle is in the way: it waits, up
/// to [`PATIENCE`]); once it reached its stopping point (the plan's end, or the next state to
/// plan again from), back on its plan within [`AT_STOP`], where that point is (grid space).
fn drive_on(
    (map, bodies, me): (&NavMap, &Bodies, Option<&Body>),
    (grid, body): (&NavGrid, f32),
    (mover, vehicle): (&Mover, &Vehicle),
    progress: &mut DriveProgress,
    transform: &mut Transform,
    desired: Option<Mut<DesiredVelocity>>,
    dt: f32,
) -> Option<Vec2> {
    let Some(plan) = progress.plan.as_ref().filter(|p| !p.segments.is_empty()) else {
        // No plan, or one of no move (its goal is the cell it stands on): there already.
        return Some(map.world_to_grid(transform.translation.truncate()));
    };
    let stop = progress.stopping_at().unwrap_or_default();
    let before = plan
        .pose_at(progress.along)
        .expect("a plan has pieces or states");
    let speed = speed_at(&before, (mover, vehicle));
    let along = (progress.along + speed * dt).min(stop);
    let pose = plan.pose_at(along).expect("as above");
    // Pushed while it stood: off its plan, it slides back onto it (see `back_onto`). A game
    // that moves the body itself is asked for the plan's velocity, its physics left to part
    // bodies.
    let to = match desired {
        Some(_) => pose.position,
        None => {
            let here = map.world_to_grid(transform.translation.truncate());
            // By what it could drive this frame, so it settles at its stop too.
            let off = slid_back(here - before.position, speed * dt);
            back_onto(pose.position, off, (grid, body))
        }
    };
    let blocker = me.and_then(|me| {
        bodies
            .blocking(me, to, progress.passing)
            .or_else(|| bodies.giving_way(me, progress.passing))
    });
    if let Some(me) = me {
        me.waits.set(blocker.is_some());
    }
    if let Some(other) = blocker {
        if progress.waited < mover.wait_time * PATIENCE {
            progress.waited += dt;
            progress.blocked_by = blocker;
            if let Some(mut d) = desired {
                d.velocity = Vec2::ZERO;
            }
            return None;
        }
        // Waited long enough: it drives through that one.
        progress.passing = Some(other);
    }
    (progress.waited, progress.blocked_by) = (0.0, None);
    // Through it once clear of it, or once it drives on itself (it no longer waits): two
    // vehicles on one way would drive on top of each other, where the one behind follows.
    if let (Some(me), Some(passing)) = (me, progress.passing)
        && bodies.of(passing).is_none_or(|b| {
            b.at.distance(to) >= me.radius + b.radius
                || b.travel.is_some() && b.blocked_by.is_none()
        })
    {
        progress.passing = None;
    }
    progress.along = along;
    put(map, (pose.facing, to), (transform, desired), dt);
    // At its stop within a push of its plan: one kept off it by a crowd pushing counts as
    // there (else it stood for good at a link's entry, say, waiting to be back on its plan).
    (progress.along >= stop - 1e-5 && to.distance(pose.position) <= AT_STOP)
        .then_some(pose.position)
}

/// Tiles a vehicle's body may be off its plan at its stop and count as there.
const AT_STOP: f32 = 0.25;

/// Tiles a second a `vehicle` drives at `pose` of its plan (slower on arcs and in reverse).
fn speed_at(pose: &Pose, (mover, vehicle): (&Mover, &Vehicle)) -> f32 {
    let mut speed = mover.speed.max(0.0);
    if pose.reverse {
        speed *= vehicle.reverse_speed;
    }
    if pose.curvature > 0.0 {
        speed *= vehicle.turn_speed;
    }
    speed
}

/// Points in time over [`DriveSettings::look_ahead`] at which vehicles' ways are compared.
const LOOK_STEPS: usize = 8;

/// Where a vehicle at `at` (grid space) driving `progress`'s plan will be over the next
/// `look_ahead` seconds if it goes on (see [`Body::ahead`]); `None` if it stands, or if
/// vehicles do not look ahead.
fn ahead_of(
    progress: &DriveProgress,
    (mover, vehicle): (&Mover, &Vehicle),
    at: Vec2,
    look_ahead: f32,
) -> Option<[Vec2; LOOK_STEPS]> {
    if progress.status != DriveStatus::Driving || look_ahead.is_nan() || look_ahead <= 0.0 {
        return None;
    }
    let plan = progress.plan.as_ref()?;
    let stop = progress.stopping_at()?;
    let mut along = progress.along;
    let mut pose = plan.pose_at(along)?;
    // Off its plan by a push, it keeps its offset.
    let off = at - pose.position;
    let step = look_ahead / LOOK_STEPS as f32;
    let mut ahead = [at; LOOK_STEPS];
    for point in &mut ahead {
        along = (along + speed_at(&pose, (mover, vehicle)) * step).min(stop);
        pose = plan.pose_at(along)?;
        *point = pose.position + off;
    }
    Some(ahead)
}

/// Moves a vehicle's body to `to` facing `facing` (grid space), or asks its controller to.
fn put(
    map: &NavMap,
    (facing, to): (Vec2, Vec2),
    (transform, desired): (&mut Transform, Option<Mut<DesiredVelocity>>),
    dt: f32,
) {
    match desired {
        Some(mut d) => {
            let from = map.world_to_grid(transform.translation.truncate());
            d.velocity = if dt > 0.0 {
                (map.grid_to_world(to) - map.grid_to_world(from)) / dt
            } else {
                Vec2::ZERO
            };
            d.facing = map.grid_to_world_dir(facing).normalize_or_zero();
        }
        None => {
            let z = transform.translation.z;
            transform.translation = map.grid_to_world(to).extend(z);
            transform.rotation = fmath::rotation_toward(map.grid_to_world_dir(facing));
        }
    }
}

/// Where a vehicle `off` its plan at `on` (grid space) goes: off by that much (it slides
/// back, never turning for it), or, where that would touch a wall, back sooner (the plan is
/// clear of walls, the way back to it need not be).
fn back_onto(on: Vec2, off: Vec2, (grid, body): (&NavGrid, f32)) -> Vec2 {
    let radius = (body - TOUCH).max(0.0);
    [1.0, 0.5, 0.0]
        .into_iter()
        .map(|k| on + off * k)
        .find(|&p| p == on || !overlaps_blocked(grid, p, radius))
        .unwrap_or(on)
}

/// Tiles a vehicle off its plan slides back toward it a tile driven: the slide adds at most
/// this share of its speed sideways, so pushes undone never look like a leap.
const SLIDE_BACK: f32 = 0.4;

/// What is left of a vehicle's offset `off` from its plan (grid space) once it could drive
/// `driven` tiles on: it shrinks by [`SLIDE_BACK`] a tile, to nothing.
fn slid_back(off: Vec2, driven: f32) -> Vec2 {
    let length = off.length();
    let left = length - SLIDE_BACK * driven.max(0.0);
    if left <= 1e-4 {
        Vec2::ZERO
    } else {
        off * (left / length)
    }
}

/// Runs the planner's searches within the frame's states, vehicle after vehicle.
fn plan(
    (drive, claims, fleet): (&DriveSettings, &Claims, &Bodies),
    maps: &Query<&NavMap>,
    vehicles: &mut Vehicles,
    planner: &mut Planner,
) {
    let mut budget = drive.expansions_per_frame.max(1) as u64;
    while budget > 0 {
        if planner.active.is_none() && !begin_next((drive, claims, fleet), maps, vehicles, planner)
        {
            return;
        }
        let Some(active) = planner.active.as_ref() else {
            return;
        };
        let (entity, version) = (active.entity, active.grid.version());
        let wanted = maps.contains(active.map)
            && vehicles.get(entity).is_ok_and(|(.., progress, _, _, _)| {
                progress.status == DriveStatus::Planning && progress.ticket == active.ticket
            });
        if !wanted {
            // Gone, or a new path came meanwhile (the vehicle waits in line for it).
            planner.active = None;
            continue;
        }
        let before = planner.search.expansions();
        let step = planner
            .search
            .step(&active.grid, budget.min(u32::MAX as u64) as u32);
        let spent = planner.search.expansions().saturating_sub(before).max(1);
        budget = budget.saturating_sub(spent);
        let end = match step {
            DriveStep::Pending => continue,
            DriveStep::Found(plan) => DriveEnd::Found(plan),
            DriveStep::Failed(_) => DriveEnd::Failed,
        };
        planner.active = None;
        let Ok((.., mut progress, _, _, _)) = vehicles.get_mut(entity) else {
            continue;
        };
        if apply(drive, &mut progress, end, version) {
            planner.waiting.push_front(entity);
        }
    }
}

/// Applies the end of `progress`'s search (on a grid of `version`): a plan to drive, another
/// try over the whole map, or no way; whether it plans again (first of those waiting).
fn apply(drive: &DriveSettings, progress: &mut DriveProgress, end: DriveEnd, version: u64) -> bool {
    match end {
        DriveEnd::Found(plan) => {
            // Stopped short of a state (see `notice_changes`), it backs to the one it planned
            // from first.
            let back = progress
                .plan
                .as_ref()
                .map(|p| p.back_to_state(progress.along))
                .unwrap_or_default();
            progress.set_plan(Some(plan.after(back)));
            progress.along = 0.0;
            progress.status = DriveStatus::Driving;
            progress.replan = false;
            progress.version = version;
            false
        }
        DriveEnd::Failed => {
            progress.tries += 1;
            if progress.tries < 2 && drive.band > 0 {
                // Round the path was too tight: the whole map next.
                return true;
            }
            progress.status = DriveStatus::NoWay;
            progress.set_plan(None);
            false
        }
        DriveEnd::CannotBegin => {
            progress.status = DriveStatus::NoWay;
            progress.set_plan(None);
            false
        }
    }
}

/// With workers: applies the plans workers found (those for a path the vehicle no longer
/// plans for are dropped), then hands the vehicles waiting to workers, up to
/// [`DRIVES_PER_RUNNER`] a runner in flight; in lockstep mode a plan is applied `ticks` after
/// its hand-off.
fn plan_on_workers(
    fleet: (&DriveSettings, &Claims, &Bodies),
    maps: &Query<&NavMap>,
    vehicles: &mut Vehicles,
    planner: &mut Planner,
    (runners, ticks): (usize, Option<u64>),
) {
    let drive = fleet.0;
    planner.workers.next_tick();
    for (handed, end) in planner.workers.take_done(ticks.is_some()) {
        let Ok((.., mut progress, _, _, _)) = vehicles.get_mut(handed.entity) else {
            continue;
        };
        if progress.status != DriveStatus::Planning || progress.ticket != handed.ticket {
            continue;
        }
        if apply(drive, &mut progress, end, handed.version) {
            planner.waiting.push_front(handed.entity);
        }
    }
    while planner.workers.in_flight() < runners * DRIVES_PER_RUNNER {
        let Some(next) = next_job(fleet, maps, vehicles, planner) else {
            return;
        };
        let to = (next.entity, next.ticket);
        planner
            .workers
            .hand_off(to, (next.grid, next.job), runners, ticks);
    }
}

/// Begins the search of the first vehicle waiting that still wants a plan; whether one began.
fn begin_next(
    fleet: (&DriveSettings, &Claims, &Bodies),
    maps: &Query<&NavMap>,
    vehicles: &mut Vehicles,
    planner: &mut Planner,
) -> bool {
    while let Some(next) = next_job(fleet, maps, vehicles, planner) {
        let job = &next.job;
        let begun = planner.search.begin_among(
            &next.grid,
            &job.model,
            job.query,
            job.band.as_deref(),
            &job.overlay,
        );
        if begun.is_ok() {
            planner.active = Some(Active {
                entity: next.entity,
                map: next.map,
                ticket: next.ticket,
                grid: next.grid,
            });
            return true;
        }
        if let Ok((.., mut progress, _, _, _)) = vehicles.get_mut(next.entity) {
            apply(fleet.0, &mut progress, DriveEnd::CannotBegin, 0);
        }
    }
    false
}

/// A vehicle's search, ready to begin.
struct NextJob {
    entity: Entity,
    map: Entity,
    /// The path (ticket) it plans for.
    ticket: Option<u64>,
    grid: GridSnapshot,
    job: DriveJob,
}

/// The search of the first vehicle waiting that still wants a plan.
fn next_job(
    (drive, claims, fleet): (&DriveSettings, &Claims, &Bodies),
    maps: &Query<&NavMap>,
    vehicles: &mut Vehicles,
    planner: &mut Planner,
) -> Option<NextJob> {
    while let Some(entity) = planner.waiting.pop_front() {
        let Ok((_, _, vehicle, agent, transform, path, mut progress, ..)) =
            vehicles.get_mut(entity)
        else {
            continue;
        };
        let Some(path) = path else { continue };
        if progress.status != DriveStatus::Planning {
            continue;
        }
        let Ok(map) = maps.get(path.map) else {
            continue;
        };
        let grid = map.grid_of(path.class);
        let body = map.wall_radius_of(path.class, agent.radius);
        let Some(model) = model_for(planner, vehicle, body, grid.rules().costs) else {
            progress.status = DriveStatus::NoWay;
            continue;
        };
        let (start, heading) = start_state(map, grid, &progress, &transform);
        let to_link = leg_goal(grid, path, progress.leg_from);
        let last_leg = to_link.is_none();
        let (goal, facing, leg) = to_link.unwrap_or_else(|| {
            let facing = path
                .request
                .facing
                .map(|f| nearest_heading(world_to_grid_dir(map, f)));
            // Where another vehicle stands already, the nearest free cell instead of stacking
            // on it (and none another is on its way to).
            let spot = Spot::of((claims, fleet, &planner.chosen), (path, map), entity);
            let goal = spot.free_near(path.goal, start).unwrap_or(path.goal);
            let from = progress.leg_from.min(path.cells.len());
            (goal, facing, &path.cells[from..])
        });
        if last_leg {
            progress.stop_at = Some(goal);
            planner.chosen.push((entity, path.map, goal));
        }
        let query = DriveQuery {
            start,
            heading,
            goal,
            facing,
            max_expansions: drive.max_expansions,
        };
        let band = (progress.tries == 0 && drive.band > 0).then(|| {
            let mut cells = leg.to_vec();
            cells.push(goal);
            band_around(grid, &cells, drive.band)
        });
        let penalty = CellOverlay::Penalty(grid.rules().costs.from_tiles(STANDING_DETOUR));
        let overlay = fleet.standing_cells(path.map, entity, penalty);
        let job = DriveJob {
            model,
            query,
            band,
            overlay,
        };
        return Some(NextJob {
            entity,
            map: path.map,
            ticket: progress.ticket,
            grid: map.snapshot_of(path.class),
            job,
        });
    }
    None
}

/// Where a vehicle may stop: a cell of its grid no other vehicle stands on or near (infantry
/// there are shoved aside).
struct Spot<'a> {
    claims: &'a Claims,
    /// The vehicles.
    vehicles: &'a Bodies,
    /// The stops other vehicles chose this frame (see [`Planner::chosen`]).
    chosen: &'a [(Entity, Entity, Cell)],
    map: Entity,
    grid: &'a NavGrid,
    /// Rings round a cell another unit must not stand in (the vehicle's footprint).
    ring: i32,
    me: Entity,
}

impl<'a> Spot<'a> {
    /// Where vehicle `me` on `path` may stop on `map`: rings as wide as its class's footprint.
    fn of(
        (claims, vehicles, chosen): (&'a Claims, &'a Bodies, &'a [(Entity, Entity, Cell)]),
        (path, map): (&NavPath, &'a NavMap),
        me: Entity,
    ) -> Self {
        Spot {
            claims,
            vehicles,
            chosen,
            map: path.map,
            grid: map.grid_of(path.class),
            ring: map
                .class_grid(path.class)
                .and_then(|c| c.ok())
                .map_or(0, |c| c.class().footprint as i32),
            me,
        }
    }

    /// Whether another vehicle stands on `cell` or within the rings round it.
    fn taken(&self, cell: Cell) -> bool {
        (-self.ring..=self.ring).any(|dy| {
            (-self.ring..=self.ring).any(|dx| {
                self.claims
                    .stopped_at(self.map, cell + Cell::new(dx, dy))
                    .is_some_and(|e| e != self.me && self.vehicles.contains(e))
            })
        })
    }

    /// The cells other vehicles on this map plan or drive to stop at.
    fn others_stops(&self) -> Vec<Cell> {
        let theirs = self.vehicles.list.iter().filter_map(|b| {
            (b.entity != self.me && b.map == self.map)
                .then_some(b.stop_at)
                .flatten()
        });
        let chosen = self
            .chosen
            .iter()
            .filter(|&&(e, map, _)| e != self.me && map == self.map)
            .map(|&(_, _, c)| c);
        theirs.chain(chosen).collect()
    }

    /// `goal`, or if it is taken the nearest free open cell within 8 rings of it that `start`
    /// reaches (row by row within a ring) and no other vehicle is on its way to stop on or near;
    /// `None` where there is none.
    fn free_near(&self, goal: Cell, start: Cell) -> Option<Cell> {
        if !self.taken(goal) {
            return Some(goal);
        }
        let stops = self.others_stops();
        let bound = |c: Cell| {
            stops
                .iter()
                .any(|s| (s.x - c.x).abs() <= self.ring && (s.y - c.y).abs() <= self.ring)
        };
        for r in 1..=8 {
            for dy in -r..=r {
                for dx in -r..=r {
                    let c = goal + Cell::new(dx, dy);
                    if (dx.abs() == r || dy.abs() == r)
                        && self.grid.same_island(start, c)
                        && !self.taken(c)
                        && !bound(c)
                    {
                        return Some(c);
                    }
                }
            }
        }
        None
    }
}

/// Where a vehicle plans from: the next state of its plan reached (it stopped there), else its
/// cell and the heading nearest its facing.
fn start_state(
    map: &NavMap,
    grid: &NavGrid,
    progress: &DriveProgress,
    transform: &Transform,
) -> (Cell, u8) {
    // At a state of its plan, or stopped short of the next one: the state it passed last.
    if let Some(plan) = &progress.plan
        && let Some(k) = plan.state_before(progress.along)
    {
        return plan.states[k];
    }
    let at = map.world_to_grid(transform.translation.truncate());
    let facing = transform.rotation * Vec3::X;
    (
        grid.cell_at(at),
        nearest_heading(world_to_grid_dir(map, facing.truncate())),
    )
}

/// A world direction in grid space.
fn world_to_grid_dir(map: &NavMap, dir: Vec2) -> Vec2 {
    map.world_to_grid(dir) - map.world_to_grid(Vec2::ZERO)
}

/// The model of `vehicle` with a body of `body` tiles, costed as its grid's steps (its
/// penalties are in those units), built once.
fn model_for(
    planner: &mut Planner,
    vehicle: &Vehicle,
    body: f32,
    costs: CostModel,
) -> Option<VehicleModel> {
    let rules = vehicle.rules(body);
    if let Some(m) = planner
        .models
        .iter()
        .find(|m| m.rules() == rules && m.costs() == costs)
    {
        return Some(m.clone());
    }
    let model = VehicleModel::new(rules, costs).ok()?;
    planner.models.push(model.clone());
    Some(model)
}
