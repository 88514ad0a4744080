//! Lazy smoothing: a found path is delivered with its first leg smoothed (the whole path's
//! waypoints up to the first at or past cell
//! [`TilepathSettings::smooth_before_delivery`](crate::TilepathSettings::smooth_before_delivery),
//! 12 by default) and the rest as cell centers; the rest is smoothed afterwards and patched
//! into the unit's [`NavPath`] beyond the waypoint the unit walks to, so the unit never notices.
//! (A worker smooths the rest of its paths itself before it sends them, with one forward pass:
//! see `workers`.) Smoothing a whole long path before delivery made it the bottleneck of
//! group orders (measured: 47 % of a 600-unit order's time in line checks, 0.3 ms a path on a
//! 192 x 192 map).
//!
//! Inline, every frame first sorts the rests waiting (see [`triage`]): a rest whose path was
//! replaced, whose unit is gone or has arrived leaves at once (a busy game replaces most paths
//! before their units walk their rests), and the others go most urgent first: the unit that will
//! reach its raw cells soonest. Urgent rests (their units reach raw cells within a few seconds)
//! get a share of every frame's budget ahead of searches and are smoothed a chunk at a time;
//! then rests waiting for more than a few frames, with one quick forward pass each; the others
//! are smoothed whole with what the frame has left. So the backlog never holds more rests than
//! there are units with paths, and rests are smoothed within a few frames however busy the
//! queue is.

use bevy::ecs::entity::EntityHashMap;
use bevy::prelude::*;

use crate::core::{Cell, NavGrid, Smoother, polyline_cells};
use crate::plugin::classes::ClassId;
use crate::plugin::map::NavMap;
use crate::plugin::movement::mover::Mover;
use crate::plugin::movement::state::{MoveState, PathProgress};
use crate::plugin::outcomes::NavPath;

/// The part of a delivered path still to smooth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Rest {
    /// Index of the path cell where the raw cell centers begin (the last smoothed waypoint is
    /// this cell's center).
    pub(super) from_cell: usize,
    /// Index of that waypoint.
    pub(super) from_waypoint: usize,
    pub(super) radius: f32,
}

/// `points`, the first leg's waypoints a [`Smoother::leading`] gave for `cells` (found looking
/// ahead over the whole path: a first leg smoothed on its own ended at a cell center 12 cells
/// out, an extra bend in every path, and a 1,000-unit rally settled 30 % later), then the
/// remaining cells' centers, and the [`Rest`] still to smooth (`None`: smoothed whole).
pub(super) fn with_raw_rest(
    grid: &NavGrid,
    cells: &[Cell],
    mut points: Vec<Vec2>,
    radius: f32,
) -> (Vec<Vec2>, Option<Rest>) {
    let last = points.last().copied();
    // A leading smoother's waypoints are cell centers of the path, in order.
    let Some(k) = cells
        .iter()
        .rposition(|&c| Some(grid.cell_center(c)) == last)
        .filter(|&k| k + 1 < cells.len())
    else {
        return (points, None);
    };
    let rest = Rest {
        from_cell: k,
        from_waypoint: points.len() - 1,
        radius,
    };
    points.extend(cells[k + 1..].iter().map(|&c| grid.cell_center(c)));
    (points, Some(rest))
}

/// The cells a unit walking `points` (the waypoints of `cells`, grid space) passes through: the
/// smoothed part traversed, the raw rest (one waypoint per cell) taken as its cells.
pub(super) fn corridor(
    grid: &NavGrid,
    cells: &[Cell],
    points: &[Vec2],
    rest: Option<Rest>,
) -> Vec<Cell> {
    match rest {
        Some(r) => {
            let mut out = polyline_cells(grid, &points[..=r.from_waypoint]);
            out.extend_from_slice(&cells[r.from_cell + 1..]);
            out
        }
        None => polyline_cells(grid, points),
    }
}

/// The rest of a delivered path, being smoothed.
pub(super) struct Refining {
    pub(super) entity: Entity,
    pub(super) ticket: u64,
    pub(super) map: Entity,
    /// The class whose grid the path is on.
    pub(super) class: ClassId,
    pub(super) rest: Rest,
    /// The plugin frame it was queued in (how long rests wait is counted from it).
    pub(super) since: u64,
    /// The plugin frame its path was delivered in (kept across chunks and smoothing again:
    /// how long the whole rest took is counted from it).
    pub(super) delivered: u64,
    /// The rest's cells, until its smoothing starts.
    cells: Vec<Cell>,
    /// Its smoothing, once started, and the urgency it was started for (see
    /// [`Refining::step`]).
    smoother: Option<(Smoother, Urgency)>,
    /// Cells looked at by a whole smoothing given up for a quicker pass.
    dropped: u64,
}

/// How soon a rest is needed, least first (it decides how the rest is smoothed: see
/// [`Refining::step`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Urgency {
    /// Smoothed whole with what a frame has left.
    #[default]
    Waiting,
    /// Waited [`LATE_FRAMES`] since its path was delivered: smoothed with one forward pass
    /// ([`Smoother::forward`]) within the urgent rests' share of the budget.
    Late,
    /// Its unit walks its raw cells within [`URGENT_SECONDS`]: smoothed a chunk at a time
    /// ([`REST_CHUNK`]), first.
    Due,
}

/// A smoothed rest, to patch into the unit's path.
pub(super) struct Refined {
    pub(super) entity: Entity,
    pub(super) ticket: u64,
    pub(super) rest: Rest,
    /// Grid-space points from the center of the rest's first cell to the goal.
    pub(super) points: Vec<Vec2>,
    /// The grid version they were smoothed on.
    pub(super) version: u64,
    /// See [`Refining::since`].
    pub(super) since: u64,
    /// See [`Refining::delivered`].
    pub(super) delivered: u64,
    /// Smoothed only up to a waypoint before the goal: the rest from there, still raw.
    pub(super) next: Option<Rest>,
}

impl Refining {
    /// Smoothing of `path`'s cells from `rest.from_cell` on, queued in frame `since`, of a path
    /// delivered in frame `delivered`.
    pub(super) fn new(
        entity: Entity,
        path: &NavPath,
        rest: Rest,
        (since, delivered): (u64, u64),
    ) -> Self {
        Refining {
            entity,
            ticket: path.ticket,
            map: path.map,
            class: path.class,
            rest,
            since,
            delivered,
            cells: path.cells[rest.from_cell..].to_vec(),
            smoother: None,
            dropped: 0,
        }
    }

    /// Cells looked at so far ([`Smoother::work`]).
    pub(super) fn work(&self) -> u64 {
        self.dropped + self.smoother.as_ref().map_or(0, |(s, _)| s.work())
    }

    /// At most `units` units of smoothing work; the patch once done. How the rest is smoothed
    /// is set by its `urgency` (as of the last triage) when its smoothing starts:
    /// - due (its unit about to walk it): a chunk at a time, the leading pass's waypoints over
    ///   its next [`REST_CHUNK`] cells (a few line checks each; the whole rest's two passes and
    ///   merges cost some twenty times as many, about a millisecond for a rest of 100 cells on a
    ///   map with scattered blocks), the rest after it queued again;
    /// - late: the same forward pass over the whole rest at once;
    /// - else whole.
    ///
    /// A whole smoothing begun with a frame's time to spare and not finished by the time its
    /// rest is late or due is given up for the quicker pass: finishing it would spend the
    /// urgent rests' share on some twenty times the work (measured with `soak --units 500`:
    /// whole smoothings were three quarters of the cells rests looked at, for a tenth of the
    /// rests).
    pub(super) fn step(&mut self, grid: &NavGrid, units: u32, urgency: Urgency) -> Option<Refined> {
        let radius = self.rest.radius;
        if let Some((whole, Urgency::Waiting)) = &self.smoother
            && urgency > Urgency::Waiting
        {
            self.dropped += whole.work();
            self.smoother = None;
        }
        let (smoother, _) = self.smoother.get_or_insert_with(|| {
            let cells = &self.cells;
            let smoother = match urgency {
                Urgency::Due => Smoother::leading(grid, cells, radius, REST_CHUNK),
                Urgency::Late => Smoother::forward(grid, cells, radius),
                Urgency::Waiting => Smoother::new(grid, cells, radius),
            };
            (smoother, urgency)
        });
        let points = smoother.step(grid, units)?;
        let (points, next) = with_raw_rest(grid, &self.cells, points, radius);
        let next = next.map(|n| Rest {
            from_cell: self.rest.from_cell + n.from_cell,
            from_waypoint: self.rest.from_waypoint + n.from_waypoint,
            radius,
        });
        Some(Refined {
            entity: self.entity,
            ticket: self.ticket,
            rest: self.rest,
            points,
            version: grid.version(),
            since: self.since,
            delivered: self.delivered,
            next,
        })
    }
}

/// What patching a unit's path came to.
pub(super) enum Patch {
    /// Patched to the goal.
    Done,
    /// Nothing to do: the path was replaced, or its unit walked all of the rest raw.
    Stale,
    /// The unit walked past the smoothed rest's start before it came: smooth again from the
    /// waypoint it walks to now.
    Again(Rest),
    /// Patched a chunk: the rest after it is still raw.
    Next(Rest),
}

/// Patches `refined` into `path` beyond the waypoint the unit walks to (`walking_to`).
pub(super) fn patch(
    path: &mut NavPath,
    map: &NavMap,
    refined: &Refined,
    walking_to: usize,
) -> Patch {
    let rest = refined.rest;
    if path.ticket != refined.ticket || rest.from_cell >= path.cells.len() {
        return Patch::Stale;
    }
    let grid = map.grid_of(path.class);
    if refined.version != grid.version() {
        // Smoothed on a grid edited since: its lines may cross the edit. Smooth again (the raw
        // rest is the path's own cells, which the repath on edit looks after).
        return Patch::Again(rest);
    }
    if walking_to > rest.from_waypoint {
        // The waypoints past `from_waypoint` are the raw cell centers, one per cell.
        let from_cell = rest.from_cell + (walking_to - rest.from_waypoint);
        if from_cell + 1 >= path.cells.len() {
            return Patch::Stale;
        }
        return Patch::Again(Rest {
            from_cell,
            from_waypoint: walking_to,
            ..rest
        });
    }
    // The corridor ends with the raw cells, one per cell, the rest's first cell among them.
    let raw = path.cells.len() - rest.from_cell;
    let keep = path.corridor.len().saturating_sub(raw) + 1;
    path.corridor.truncate(keep);
    path.corridor
        .extend(polyline_cells(grid, &refined.points).into_iter().skip(1));
    path.waypoints.truncate(rest.from_waypoint + 1);
    path.waypoints
        .extend(refined.points[1..].iter().map(|&p| map.grid_to_world(p)));
    refined.next.map_or(Patch::Done, Patch::Next)
}

/// The share of the service phase's budget urgent rests take ahead of searches (most urgent
/// first); all rests get what the frame has left.
pub(super) const REST_SHARE: u32 = 4;

/// Late rests waiting at once from which they take half of the service phase's budget instead
/// of [`REST_SHARE`]'s part, unless the queue is behind ([`BEHIND_FRAMES`]): a group order's
/// rests all come late together. Measured with `soak --units 500 --lockstep` over 20,900
/// ticks (a 200-unit order every 300 ticks): 97.46 % of the rests still wanted 30 ticks after
/// delivery smoothed by then with a quarter of the budget, 99.98 % with this, at the same
/// order-to-outcome p99 (10 ticks).
pub(super) const BURST_RESTS: usize = 50;

/// Seconds before its unit walks its raw cells within which a rest is urgent (smoothed a chunk
/// at a time: see [`Refining::step`]).
pub(super) const URGENT_SECONDS: f32 = 3.0;

/// Cells an urgent rest's chunk covers at least.
pub(super) const REST_CHUNK: usize = 24;

/// Frames after its path's delivery from which a rest is late: smoothed within the urgent rests'
/// share, after the rests due (see [`Urgency::Late`]), unless the queue is behind
/// ([`BEHIND_FRAMES`]). Before that a frame with time to spare smooths it whole. Measured with
/// `soak --units 500 --lockstep` over 20,900 ticks: 98.6 % of the rests still wanted 30 ticks
/// after delivery smoothed by then at 2 ticks, 97.3 % at 8 (a 200-unit group order's rests come
/// late all at once), with the same order-to-outcome latency.
pub(super) const LATE_FRAMES: u64 = 2;

/// Frames a request may have waited for its outcome (at the end of the last frame) with late
/// rests still smoothed ahead of searches: beyond it the queue is behind (as the overload
/// warning counts it) and the searches go first. Most rests of an overloaded game are replaced
/// before their units walk them, and those about to be walked are due (measured with `soak`,
/// 2,000 units and 2 workers: late rests ahead of searches doubled the order-to-outcome
/// latency, and most of them were smoothed for nothing). At 30 frames a 500-unit game's group
/// orders (200 units at once) tripped it now and then, and rests waited on.
pub(super) const BEHIND_FRAMES: u64 = 60;

/// What [`triage`] found.
pub(super) struct Triage {
    /// Rests due ([`URGENT_SECONDS`]), at the back...
    pub(super) due: usize,
    /// ... and late ([`LATE_FRAMES`]) before them.
    pub(super) late: usize,
    /// Units walking the raw cells of their rest now.
    pub(super) walking_raw: usize,
    /// Frames the oldest rest has waited since its path was delivered.
    pub(super) oldest: u64,
    /// Rests gone through, and units' places read for them (the triage's work, counted).
    pub(super) looked: (u64, u64),
}

/// Seconds after which a rest's estimate is made again even if it is not near due.
const RECHECK_SECONDS: f32 = 1.0;

/// The units [`Rests::triage`] reads: where each stands, how fast it walks, its path and
/// progress.
pub(super) type RestUnits<'w, 's> = Query<
    'w,
    's,
    (
        &'static Transform,
        &'static NavPath,
        Option<&'static PathProgress>,
        Option<&'static Mover>,
    ),
>;

/// Rests checked at most per frame (their units' places read; see [`Rests::triage`]).
const MAX_CHECKS: usize = 256;

/// A rest waiting, with what sorting it needs kept beside it (not behind its box).
struct Entry {
    entity: Entity,
    ticket: u64,
    since: u64,
    delivered: u64,
    /// How soon it is needed (as of the last triage).
    urgency: Urgency,
    /// When (the plugin's clock, seconds) its unit was last estimated to reach its raw cells
    /// (infinite: not estimated yet, or its unit does not move), and when that was.
    due: f32,
    checked: f32,
    rest: Box<Refining>,
}

/// The rests waiting to be smoothed inline, most urgent last (taken from the back), and the
/// ticket of each unit's delivered path that has a rest.
#[derive(Default)]
pub(super) struct Rests {
    list: Vec<Entry>,
    /// The ticket of each unit's latest delivered path, for units whose latest path has a rest
    /// (a rest of another ticket is stale: its path was replaced).
    live: EntityHashMap<u64>,
    /// The rests that left this frame, for the frame's statistics.
    pub(super) waits: RestWaits,
}

/// Frames from delivery to leaving of the rests that left the queue this frame.
#[derive(Default)]
pub(super) struct RestWaits {
    /// Rests smoothed to their path's goal.
    pub(super) smoothed: Vec<u32>,
    /// Rests that left unsmoothed: path replaced, unit or map gone, unit arrived or walked past.
    pub(super) abandoned: Vec<u32>,
}

impl RestWaits {
    fn log(&mut self, delivered: u64, frame: u64, smoothed: bool) {
        let waited = frame.saturating_sub(delivered).min(u32::MAX as u64) as u32;
        if smoothed {
            self.smoothed.push(waited);
        } else {
            self.abandoned.push(waited);
        }
    }
}

impl Rests {
    /// Rests waiting.
    pub(super) fn len(&self) -> usize {
        self.list.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    fn push(&mut self, r: Refining) {
        self.list.push(Entry {
            entity: r.entity,
            ticket: r.ticket,
            since: r.since,
            delivered: r.delivered,
            urgency: Urgency::Waiting,
            due: f32::INFINITY,
            checked: f32::NEG_INFINITY,
            rest: Box::new(r),
        });
    }

    /// The rests of units' latest paths still waiting to be smoothed.
    pub(super) fn live_rests(&self) -> impl Iterator<Item = (Entity, Rest)> + '_ {
        let live = |e: &&Entry| self.live.get(&e.entity) == Some(&e.ticket);
        self.list
            .iter()
            .filter(live)
            .map(|e| (e.entity, e.rest.rest))
    }

    /// A path delivered to `entity`: any rest of an older path of the unit is stale now.
    pub(super) fn delivered(&mut self, entity: Entity, ticket: u64, rest: Option<Refining>) {
        match rest {
            Some(r) => {
                self.live.insert(entity, ticket);
                self.push(r);
            }
            None => {
                self.live.remove(&entity);
            }
        }
    }

    /// A rest queued again (after a chunk, or to smooth again) in `frame`: it leaves instead if
    /// its path was replaced meanwhile.
    pub(super) fn again(&mut self, r: Refining, frame: u64) {
        if self.live.get(&r.entity) == Some(&r.ticket) {
            self.push(r);
        } else {
            self.waits.log(r.delivered, frame, false);
        }
    }

    /// The rest of `entity`'s path `ticket`, delivered in frame `delivered`, leaves in `frame`:
    /// `smoothed` to the goal, or no longer wanted.
    pub(super) fn left(
        &mut self,
        entity: Entity,
        ticket: u64,
        delivered: u64,
        frame: u64,
        smoothed: bool,
    ) {
        if self.live.get(&entity) == Some(&ticket) {
            self.live.remove(&entity);
        }
        self.waits.log(delivered, frame, smoothed);
    }

    /// The rest to work on next, and how soon it is needed (as of the last triage: see
    /// [`Refining::step`]).
    pub(super) fn last_mut(&mut self) -> Option<(&mut Refining, Urgency)> {
        self.list.last_mut().map(|e| (&mut *e.rest, e.urgency))
    }

    /// Takes the rest to work on next away.
    pub(super) fn pop(&mut self) -> Option<Refining> {
        self.list.pop().map(|e| *e.rest)
    }

    /// Drops the rests no unit will walk (path replaced, unit or map gone, unit arrived) and
    /// puts the urgent ones last, most urgent last: by when the unit reaches the rest's first
    /// waypoint (now when it walks raw cells already), then by ticket, so the order depends on
    /// nothing but the game's state. `now` is the plugin's clock in seconds. An estimate (the
    /// straight distance at the unit's speed: never later than the unit can get there) is made
    /// again only for rests due within [`URGENT_SECONDS`] and those estimated more than
    /// [`RECHECK_SECONDS`] ago (or never), at most [`MAX_CHECKS`] a frame, rests not estimated
    /// yet first; so a frame reads a few units' places, not every unit's (measured: 0.3-0.6 ms a
    /// frame for 1,650 rests read every frame, and 10,000 new rests at once would read 10,000).
    pub(super) fn triage(
        &mut self,
        units: &RestUnits,
        maps: &Query<&NavMap>,
        frame: u64,
        now: f32,
    ) -> Triage {
        let (live, waits) = (&mut self.live, &mut self.waits);
        let mut checks = 0;
        let rests = self.list.len() as u64;
        self.list.retain_mut(|e| {
            if live.get(&e.entity) != Some(&e.ticket) {
                waits.log(e.delivered, frame, false);
                return false;
            }
            let due_soon = e.due - now < URGENT_SECONDS;
            if !due_soon && now - e.checked < RECHECK_SECONDS || checks >= MAX_CHECKS {
                return true;
            }
            checks += 1;
            match due(&e.rest, units, maps) {
                Some(seconds) => {
                    (e.due, e.checked) = (now + seconds, now);
                    true
                }
                None => {
                    live.remove(&e.entity);
                    waits.log(e.delivered, frame, false);
                    false
                }
            }
        });
        // Not estimated yet first (checked next frame), then the others waiting, the late (the
        // oldest last), the due last (the soonest last).
        for e in &mut self.list {
            e.urgency = if e.checked > f32::NEG_INFINITY && e.due - now < URGENT_SECONDS {
                Urgency::Due
            } else if frame.saturating_sub(e.delivered) >= LATE_FRAMES {
                Urgency::Late
            } else {
                Urgency::Waiting
            };
        }
        let late = partition(&mut self.list, |e| e.urgency == Urgency::Waiting);
        let due = late + partition(&mut self.list[late..], |e| e.urgency == Urgency::Late);
        self.list[due..]
            .sort_unstable_by(|a, b| b.due.total_cmp(&a.due).then(b.ticket.cmp(&a.ticket)));
        self.list[late..due].sort_unstable_by_key(|e| (u64::MAX - e.delivered, e.ticket));
        partition(&mut self.list[..late], |e| e.checked == f32::NEG_INFINITY);
        Triage {
            due: self.list.len() - due,
            late: due - late,
            walking_raw: self.list[due..].iter().filter(|e| e.due <= now).count(),
            oldest: self
                .list
                .iter()
                .map(|e| frame.saturating_sub(e.since))
                .max()
                .unwrap_or(0),
            looked: (rests, checks as u64),
        }
    }
}

/// Moves the entries for which `front` holds before the others (in an order that depends on
/// nothing but the list's); returns how many there are.
fn partition(list: &mut [Entry], front: impl Fn(&Entry) -> bool) -> usize {
    let (mut head, mut tail) = (0, list.len());
    while head < tail {
        if front(&list[head]) {
            head += 1;
        } else {
            tail -= 1;
            list.swap(head, tail);
        }
    }
    head
}

/// Seconds until the unit of `r` reaches its raw cells (0 if it walks them; infinite if it does
/// not move); `None` if no unit will walk them.
fn due(r: &Refining, units: &RestUnits, maps: &Query<&NavMap>) -> Option<f32> {
    let (transform, path, progress, mover) = units.get(r.entity).ok()?;
    if path.ticket != r.ticket {
        return None;
    }
    let map = maps.get(r.map).ok()?;
    Some(match (progress, mover) {
        (Some(p), _) if p.state == MoveState::Arrived => return None,
        (Some(p), Some(m)) if p.state.is_underway() && m.speed > 0.0 => {
            if p.waypoint > r.rest.from_waypoint {
                0.0
            } else {
                let start = path.waypoints.get(r.rest.from_waypoint)?;
                let here = map.world_to_grid(transform.translation.truncate());
                here.distance(map.world_to_grid(*start)) / m.speed
            }
        }
        _ => f32::INFINITY,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{SearchConfig, find_path};
    use crate::plugin::request::{PathOrigin, PathRequest};

    /// A 48 x 48 grid with a wall stub every few cells, and the path across it.
    fn grid_and_path() -> (NavGrid, NavPath) {
        let mut grid = NavGrid::new(48, 48).unwrap();
        for k in 0..40 {
            let c = Cell::new(3 + (k * 7) % 42, 2 + (k * 11) % 44);
            grid.set_walkable(c, false).unwrap();
            grid.set_walkable(c + Cell::new(0, 1), false).unwrap();
        }
        let p = find_path(
            &grid,
            Cell::new(0, 0),
            Cell::new(47, 46),
            &SearchConfig::default(),
        )
        .unwrap();
        let path = NavPath {
            waypoints: p.cells.iter().map(|&c| grid.cell_center(c)).collect(),
            corridor: p.cells.clone(),
            cells: p.cells,
            cost: p.cost,
            length: p.length,
            goal: p.goal,
            map: Entity::PLACEHOLDER,
            class: ClassId::DEFAULT,
            origin: PathOrigin::User,
            search: Default::default(),
            ticket: 1,
            request: PathRequest::to_cell(p.goal),
        };
        (grid, path)
    }

    fn rest_of(path: &NavPath) -> Refining {
        let rest = Rest {
            from_cell: 0,
            from_waypoint: 0,
            radius: 0.3,
        };
        Refining::new(Entity::PLACEHOLDER, path, rest, (0, 0))
    }

    #[test]
    fn a_whole_smoothing_not_done_when_its_rest_is_late_gives_way_to_the_quick_pass() {
        let (grid, path) = grid_and_path();
        // Smoothed as a late rest from the start.
        let mut quick = rest_of(&path);
        let quick_points = loop {
            if let Some(done) = quick.step(&grid, 1, Urgency::Late) {
                break done.points;
            }
        };
        // Begun whole with time to spare, late before it is done.
        let mut begun = rest_of(&path);
        for _ in 0..3 {
            assert!(begun.step(&grid, 1, Urgency::Waiting).is_none());
        }
        let given_up = begun.work();
        let mut work = given_up;
        assert!(work > 0);
        let points = loop {
            let done = begun.step(&grid, 1, Urgency::Late);
            // The work given up still counts: the count never goes back.
            assert!(begun.work() >= work);
            work = begun.work();
            if let Some(done) = done {
                break done.points;
            }
        };
        assert_eq!(points, quick_points);
        assert_eq!(work, given_up + quick.work());
        // A whole smoothing left alone finishes whole (and looks at far more cells).
        let mut whole = rest_of(&path);
        while whole.step(&grid, 1, Urgency::Waiting).is_none() {}
        assert!(whole.work() > work, "{} vs {work}", whole.work());
    }
}
