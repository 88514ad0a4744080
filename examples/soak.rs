//! Soak runner: a busy game, run long, through the public API only (headless).
//!
//! ```text
//! cargo run --release --example soak -- [--units N] [--frames F] [--drain D] [--workers W] \
//!     [--map-size S] [--seed X] [--sample K] [--lockstep] [--checksums N] [--jitter] \
//!     [--save-at F] [--no-jump-tables] [--vehicles K] [--threads T]
//! ```
//!
//! A busy game's mix, as its players and AI would make it: on an S x S map (256 by
//! default) with scattered blocks, N units (500) with a `Mover`; every frame 1 % of the units get
//! a new order to a random cell (`GoalPolicy::NearestReachable`); every 300 frames a 200-unit
//! group order through `group_order`; every 100 frames 5 units ordered to follow others
//! (`PathRequest::follow`, range 3); every 10 frames 3 random cells toggled (never within a
//! cell of a unit); every 500 frames 20 units despawned and 20 spawned with orders; every 50
//! frames a request outside the map and a unit given three orders in one frame. F frames of that
//! (20,000), then D frames (900) with no new input. Default settings except `--workers`
//! (`W = 0`: inline). Frames are 60 Hz game time; with workers, the runner also sleeps out each
//! frame's 16.7 ms of wall time, as a game would, so the workers get the rest of the frame.
//!
//! It prints, as its last line,
//! `summary units=<n> workers=<w> frames=<n> requests=<n> outcomes=<n> duplicates=<n> missing=<n> pending_after_drain=<n> latency_p50=<f> latency_p99=<f> latency_max=<f> rests_max=<n> rest_age_p99=<f> rest_age_max=<n> rests_smoothed_30=<f> walking_raw=<n> seen_raw=<n> blocked_overlaps=<n> rss_growth_mb_per_10k=<f> checksum=<hex>`:
//! - `requests`: the game's requests (each `PathRequest` inserted); `outcomes`: the outcomes of
//!   those requests; `duplicates`: requests with more than one outcome, and outcomes sent
//!   after their unit was despawned; `missing`: requests with none (a despawned unit's requests
//!   without an outcome vanish with it by design and are not missing: `vanished` on the
//!   `requests` line, counted by the game as its orders to the unit less their outcomes, at
//!   most as many as it was given in the 180 frames before the despawn; any more lost their
//!   outcomes, and count as missing, `lost_before_despawn`);
//! - `latency_*`: frames from an order to its outcome (the game's requests), percentiles;
//! - `rests_max`: the most rests of delivered paths waiting to be smoothed in any frame
//!   ([`TilepathFrameStats::refining`](bevy_tilepath::TilepathFrameStats)), and `rest_age_*` the
//!   age in frames of the oldest of them, over frames; `walking_raw`: unit-frames in which a
//!   unit walked the raw cell centers of a rest not smoothed yet; `rests_smoothed_30`: of the
//!   rests still wanted 30 frames after their path was delivered (smoothed later, or left
//!   unsmoothed after that: path replaced, unit gone), the percentage smoothed to the goal
//!   within those 30 frames, 100 if no path had a rest (paths found on workers come smoothed
//!   whole); the `rests` line gives the rests smoothed and their waits, and the rests that left
//!   unsmoothed;
//! - `seen_raw`: unit-frames in which the runner saw a unit walk to a waypoint a smoothed path
//!   would not have: one cell step from the waypoint before it and from the one after, with a
//!   clear line for its body from the one before to the one after (the raw cell centers of a
//!   rest), leaving out waypoints near a cell opened since the path's search may have read the
//!   grid (a wall that came down after smoothing). `walking_raw` is the plugin's own count of the
//!   same, `seen_raw` checks it from outside (walkers only: vehicles drive plans of their own);
//! - `blocked_overlaps`: unit-frames in which a unit's body overlaps a blocked cell (by more than
//!   a thousandth of a tile: smoothed lines may touch walls, and a body sampled on one, float
//!   rounding aside, touches them);
//! - `rss_growth_mb_per_10k`: the process's resident memory, sampled every K frames (100), its
//!   least-squares slope after warm-up (the first quarter of the input frames) until the input
//!   stops, in MB per 10,000 frames (the `frames` line gives the same slope of the bytes live
//!   on the heap, `heap_growth_mb_per_10k`, counted by the runner's allocator: memory the
//!   program holds, apart from pages the allocator keeps; and, in lockstep mode with workers,
//!   the frames in which the queue waited more than 1 ms for a result due, `worker_waits_over_1ms`,
//!   and the longest wait, `max_worker_wait_ms`);
//! - the `load` line: the share of the map's cells blocked at the start and the end (the edits
//!   toggle cells, so walls accumulate: the same mix grows dearer to serve), and by quarter of
//!   the input frames, the node expansions per search started, the searches started and the
//!   frames in which a request had waited more than 60 frames (the queue behind); the
//!   `requests` line counts the plugin's own outcomes by their origin (repaths after edits,
//!   units stuck, errands: `own_by_origin`); the `movement` line gives the movement systems'
//!   wall time a frame (median, 99th percentile, max) and, as means a frame, its phases and the
//!   units moving, standing and asleep (`MovementFrameStats`);
//! - `checksum`: a hash of every unit's position bits, in the runner's own unit order, at the
//!   end (the same seed and settings give the same figure when the run is deterministic).
//!
//! With `--lockstep` the plugin group runs in `FixedUpdate` (one tick a frame) in lockstep mode
//! ([`TilepathSettings::lockstep`]), each unit keyed by the game's key
//! ([`LockstepKey`](bevy_tilepath::LockstepKey)); `--checksums N` prints the plugin's
//! [`NavChecksum`](bevy_tilepath::NavChecksum) every N ticks as `checksum tick=<t> value=<hex>`
//! (two runs with the same arguments must print the same lines, whatever the machine's load),
//! and `--jitter` sleeps a random 0-4 ms between ticks (from the wall clock, not the seed).
//! `--no-jump-tables` turns [`TilepathSettings::jump_tables`] off (jump point searches scan).
//! `--vehicles K` makes every K-th unit spawned a [`Vehicle`](bevy_tilepath::Vehicle) (turning
//! radius 1.5 tiles, reversing allowed, body radius 0.3): it drives legal turns, never in place;
//! a `vehicles` line gives how many, the tiles they drove, their sharpest turn against their
//! turning radius (`max_turn_ratio`: the heading's change over the distance driven in a frame,
//! times the radius), the vehicle-frames spent waiting for a plan (`planning_frames`) and those
//! in which one turned standing still (`in_place_turns`).
//! `--threads T` gives Bevy's task pools T threads in all (by default, as many as the machine
//! has cores): in lockstep mode the checksums must not depend on it.
//!
//! With `--save-at F` (feature `serialize`) the game is saved at the end of frame F (units, map
//! and settings, as RON, through `bevy_tilepath::save_with`) and goes on in a new app that
//! loads it, as a player who saves, quits and loads would; it prints
//! `saved frame=<n> bytes=<n> save_ms=<f> load_ms=<f>`, and every count goes on across the save.
//!
//! The runner exits non-zero if a request has more than one outcome or none.

#[path = "common/mod.rs"]
mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_tilepath::prelude::*;
use bevy_tilepath::{
    Lockstep, LockstepKey, MoveState, MovementFrameStats, NavChecksum, PendingRequests,
    TilepathFrameStats, TilepathSchedule,
};
use common::Rng;

const USAGE: &str = "usage: soak [--units N] [--frames F] [--drain D] [--workers W] [--map-size S] [--seed X] [--sample K] [--lockstep] [--checksums N] [--jitter] [--save-at F] [--no-jump-tables] [--vehicles K] [--threads T]";

/// Frames within which a request may still be without an outcome when its unit is despawned
/// (3 s: the longest latency of these runs is under a second): a despawn ends the requests of
/// its unit that are in flight, not one whose outcome was lost long before.
const VANISH_WINDOW: usize = 180;
/// Tiles per second of every unit.
const UNIT_SPEED: f32 = 6.0;

struct Args {
    units: u32,
    frames: usize,
    drain: usize,
    workers: usize,
    size: u32,
    seed: u64,
    sample: usize,
    lockstep: bool,
    checksums: usize,
    jitter: bool,
    save_at: usize,
    /// `--no-jump-tables`: jump point searches scan (no JPS+ tables).
    no_jump_tables: bool,
    /// `--vehicles K`: every K-th unit spawned is a vehicle (0: none).
    vehicles: u32,
    /// `--threads T`: the task pools' threads in all (0: Bevy's default).
    threads: usize,
}

impl Args {
    fn parse() -> Result<Args, String> {
        use lexopt::prelude::*;
        let mut a = Args {
            units: 500,
            frames: 20_000,
            drain: 900,
            workers: 0,
            size: 256,
            seed: 1,
            sample: 100,
            lockstep: false,
            checksums: 0,
            jitter: false,
            save_at: 0,
            no_jump_tables: false,
            vehicles: 0,
            threads: 0,
        };
        let mut parser = lexopt::Parser::from_env();
        while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
            match arg {
                Long("units") => a.units = common::value(&mut parser, "--units")?,
                Long("frames") => a.frames = common::value(&mut parser, "--frames")?,
                Long("drain") => a.drain = common::value(&mut parser, "--drain")?,
                Long("workers") => a.workers = common::value(&mut parser, "--workers")?,
                Long("map-size") => a.size = common::value(&mut parser, "--map-size")?,
                Long("seed") => a.seed = common::value(&mut parser, "--seed")?,
                Long("sample") => a.sample = common::value(&mut parser, "--sample")?,
                Long("lockstep") => a.lockstep = true,
                Long("checksums") => a.checksums = common::value(&mut parser, "--checksums")?,
                Long("jitter") => a.jitter = true,
                Long("save-at") => a.save_at = common::value(&mut parser, "--save-at")?,
                Long("no-jump-tables") => a.no_jump_tables = true,
                Long("vehicles") => a.vehicles = common::value(&mut parser, "--vehicles")?,
                Long("threads") => a.threads = common::value(&mut parser, "--threads")?,
                _ => return Err(common::unexpected(arg)),
            }
        }
        if a.size < 16 {
            return Err(format!("--map-size {} is below 16", a.size));
        }
        if a.units < 20 {
            return Err(format!("--units {} is below 20", a.units));
        }
        a.sample = a.sample.max(1);
        if a.save_at > 0 && !cfg!(feature = "serialize") {
            return Err("--save-at needs the `serialize` feature".into());
        }
        Ok(a)
    }
}

/// The game's key of a unit (stable across runs, unlike entity ids; saved with the game).
#[derive(Component, Clone, Copy, Reflect)]
#[reflect(Component)]
struct Key(u32);

/// Values counted by size, in memory allocated (and written) up front, so the runner's own
/// bookkeeping does not grow the memory it measures. Values past the last bucket count in it.
struct Histogram(Vec<u64>);

/// The movement systems' figures over the run ([`MovementFrameStats`]), for the `movement` line.
struct MovementTally {
    total_us: Histogram,
    frames: u64,
    /// Sums over the frames: steps, push, facing, release, vehicles (microseconds); units
    /// moving, standing, asleep.
    phases_us: [u64; 5],
    units: [u64; 3],
}

impl MovementTally {
    fn new() -> Self {
        MovementTally {
            total_us: Histogram::new(100_000),
            frames: 0,
            phases_us: [0; 5],
            units: [0; 3],
        }
    }

    fn add(&mut self, m: &MovementFrameStats) {
        let us = |d: Duration| d.as_micros() as u64;
        self.total_us.add(us(m.total()) as usize);
        self.frames += 1;
        for (sum, d) in self
            .phases_us
            .iter_mut()
            .zip([m.steps, m.push, m.facing, m.release, m.vehicles])
        {
            *sum += us(d);
        }
        for (sum, n) in self.units.iter_mut().zip([m.moving, m.standing, m.asleep]) {
            *sum += u64::from(n);
        }
    }

    /// `movement p50_ms= p99_ms= max_ms= steps_ms= push_ms= facing_ms= release_ms=
    /// vehicles_ms= moving= standing= asleep=` (phases and units: means a frame).
    fn line(&self) -> String {
        let n = self.frames.max(1) as f64;
        let ms = |us: u64| us as f64 / 1000.0 / n;
        let [steps, push, facing, release, vehicles] = self.phases_us;
        let [moving, standing, asleep] = self.units;
        format!(
            "movement p50_ms={:.3} p99_ms={:.3} max_ms={:.3} steps_ms={:.3} push_ms={:.3} facing_ms={:.3} release_ms={:.3} vehicles_ms={:.3} moving={:.0} standing={:.0} asleep={:.0}",
            self.total_us.percentile(0.5) as f64 / 1000.0,
            self.total_us.percentile(0.99) as f64 / 1000.0,
            self.total_us.percentile(1.0) as f64 / 1000.0,
            ms(steps),
            ms(push),
            ms(facing),
            ms(release),
            ms(vehicles),
            moving as f64 / n,
            standing as f64 / n,
            asleep as f64 / n,
        )
    }
}

impl Histogram {
    fn new(buckets: usize) -> Self {
        let mut v = vec![0u64; buckets.max(1)];
        for x in v.iter_mut() {
            *x = std::hint::black_box(0); // touch every page now
        }
        Histogram(v)
    }

    fn add(&mut self, value: usize) {
        let last = self.0.len() - 1;
        self.0[value.min(last)] += 1;
    }

    /// Values added.
    fn count(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Values added that were at most `value`.
    fn count_at_most(&self, value: usize) -> u64 {
        self.0.iter().take(value + 1).sum()
    }

    /// The `p` percentile (nearest rank, `p` in 0..=1; 0 for no values).
    fn percentile(&self, p: f64) -> usize {
        let n: u64 = self.0.iter().sum();
        let rank = ((n as f64 * p).ceil() as u64).max(1);
        let mut seen = 0;
        for (value, &count) in self.0.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return value;
            }
        }
        0
    }
}

/// One bit per ticket (tickets count up from 1), allocated and written up front for the
/// tickets the run is expected to make (it grows past them if need be).
struct TicketBits(Vec<u64>);

impl TicketBits {
    fn new(tickets: usize) -> Self {
        TicketBits(Histogram::new(tickets / 64 + 1).0)
    }

    /// Sets `ticket`'s bit; whether it was set already.
    fn set(&mut self, ticket: u64) -> bool {
        let (word, bit) = ((ticket / 64) as usize, ticket % 64);
        if word >= self.0.len() {
            self.0.resize(word + 1, 0);
        }
        let was = self.0[word] >> bit & 1 == 1;
        self.0[word] |= 1 << bit;
        was
    }
}

/// Outcomes as the game sees them.
#[derive(Resource)]
struct Outcomes {
    /// The tickets of the game's requests that had an outcome.
    answered: TicketBits,
    /// Outcomes of those tickets beyond the first.
    duplicates: u64,
    /// Order-to-outcome latency in frames of the game's requests.
    latency: Histogram,
    found: u64,
    failed: u64,
    cancelled: u64,
    /// Outcomes of the plugin's own requests (repaths, errands).
    own: u64,
    /// The same, by origin, in the order first seen.
    own_by_origin: Vec<(PathOrigin, u64)>,
    /// Outcomes of the game's requests per unit (a despawned unit's requests without one
    /// vanish with it).
    per_unit: PerUnit,
}

/// A count per unit key.
#[derive(Default)]
struct PerUnit(Vec<u32>);

impl PerUnit {
    fn add(&mut self, key: Key) {
        let k = key.0 as usize;
        if k >= self.0.len() {
            self.0.resize(k + 1, 0);
        }
        self.0[k] += 1;
    }

    fn get(&self, key: Key) -> u32 {
        self.0.get(key.0 as usize).copied().unwrap_or(0)
    }
}

fn count_outcomes(
    mut reader: MessageReader<PathOutcome>,
    mut o: ResMut<Outcomes>,
    keys: Query<&Key>,
) {
    for outcome in reader.read() {
        if !outcome.origin.is_user() {
            o.own += 1;
            match o
                .own_by_origin
                .iter_mut()
                .find(|(k, _)| *k == outcome.origin)
            {
                Some((_, n)) => *n += 1,
                None => o.own_by_origin.push((outcome.origin, 1)),
            }
            continue;
        }
        if o.answered.set(outcome.ticket) {
            o.duplicates += 1;
        }
        match keys.get(outcome.entity) {
            Ok(&key) => o.per_unit.add(key),
            // A unit that is gone is owed nothing: its requests vanished with it.
            Err(_) => o.duplicates += 1,
        }
        o.latency.add(outcome.latency_frames as usize);
        match outcome.kind {
            OutcomeKind::Found { .. } => o.found += 1,
            OutcomeKind::Failed(_) => o.failed += 1,
            OutcomeKind::Cancelled => o.cancelled += 1,
        }
    }
}

/// Scattered blocks: a tenth of the cells, in clumps of one to four.
fn generate(size: u32, rng: &mut Rng) -> NavGrid {
    let mut grid = NavGrid::new(size, size).expect("valid size");
    let s = size as i32;
    let clumps = size * size / 25;
    for _ in 0..clumps {
        let (x, y) = (rng.below(size) as i32, rng.below(size) as i32);
        let (w, h) = (1 + rng.below(2) as i32, 1 + rng.below(2) as i32);
        for dy in 0..h {
            for dx in 0..w {
                let c = Cell::new(x + dx, y + dy);
                if c.x < s && c.y < s {
                    grid.set_walkable(c, false).expect("in bounds");
                }
            }
        }
    }
    grid
}

/// The game: its units in its own order, and what it has asked for.
struct Game {
    rng: Rng,
    map: Entity,
    size: u32,
    units: Vec<(Key, Entity)>,
    next_key: u32,
    /// Every this many units spawned is a vehicle (0: none).
    vehicles: u32,
    /// The game's requests inserted.
    requests: u64,
    /// Requests without an outcome when their unit was despawned (they vanish with it).
    vanished: u64,
    /// Requests without an outcome when their unit was despawned that no despawn can explain:
    /// given more than [`VANISH_WINDOW`] frames before it (counted as missing).
    lost: u64,
    /// The game's requests per unit.
    given: PerUnit,
    /// The frames they were given in, per unit, in order.
    given_at: Vec<Vec<usize>>,
    /// The frame of the input being given.
    now: usize,
    /// Requests per ticket can only be read from outcomes; these count inserts per frame kind.
    bad_requests: u64,
    group_orders: u64,
    edits: u64,
    /// The frame each cell was last opened in (for `seen_raw`: a wall that came down after a
    /// path was smoothed leaves waypoints a smoothing now would drop).
    opened: std::collections::HashMap<Cell, usize>,
}

impl Game {
    fn random_cell(&mut self) -> Cell {
        Cell::new(
            self.rng.below(self.size) as i32,
            self.rng.below(self.size) as i32,
        )
    }

    fn random_unit(&mut self) -> Entity {
        self.units[self.rng.below(self.units.len() as u32) as usize].1
    }

    /// A random walkable cell of the map, for a new unit.
    fn spawn_cell(&mut self, world: &World) -> Cell {
        let map = world.get::<NavMap>(self.map).expect("the map");
        loop {
            let c = self.random_cell();
            if map.grid().is_walkable(c) {
                return c;
            }
        }
    }

    fn spawn(&mut self, world: &mut World, order: bool) {
        let cell = self.spawn_cell(world);
        let pos = world
            .get::<NavMap>(self.map)
            .expect("the map")
            .cell_to_world(cell);
        let key = Key(self.next_key);
        self.next_key += 1;
        let mut e = world.spawn((
            key,
            LockstepKey(key.0 as u64),
            Transform::from_xyz(pos.x, pos.y, 0.0),
            Mover {
                speed: UNIT_SPEED,
                ..Default::default()
            },
        ));
        if order {
            self.gave(key);
            let goal = {
                let c = Cell::new(
                    self.rng.below(self.size) as i32,
                    self.rng.below(self.size) as i32,
                );
                PathRequest::to_cell(c).with_policy(GoalPolicy::NearestReachable)
            };
            e.insert(goal);
        }
        if self.vehicles > 0 && key.0.is_multiple_of(self.vehicles) {
            e.insert((bevy_tilepath::Vehicle::default(), NavAgent::default()));
        }
        let id = e.id();
        self.units.push((key, id));
    }

    fn order(&mut self, world: &mut World, unit: Entity, request: PathRequest) {
        let key = *world.get::<Key>(unit).expect("a unit");
        self.gave(key);
        world.entity_mut(unit).insert(request);
    }

    /// Counts a request given to `key`'s unit.
    fn gave(&mut self, key: Key) {
        self.given.add(key);
        let k = key.0 as usize;
        if k >= self.given_at.len() {
            self.given_at.resize(k + 1, Vec::new());
        }
        self.given_at[k].push(self.now);
        self.requests += 1;
    }

    /// `key`'s unit is despawned with `unanswered` of its requests without an outcome. A despawn
    /// ends only requests in flight, given within [`VANISH_WINDOW`] frames: at most that many
    /// vanish with the unit, and any more lost their outcomes before.
    fn vanish(&mut self, key: Key, unanswered: u32) {
        let at = self
            .given_at
            .get(key.0 as usize)
            .map_or(&[][..], Vec::as_slice);
        let recent = at
            .iter()
            .filter(|&&f| f + VANISH_WINDOW >= self.now)
            .count() as u64;
        let vanished = u64::from(unanswered).min(recent);
        self.vanished += vanished;
        self.lost += u64::from(unanswered) - vanished;
    }

    /// The game's input of frame `frame`.
    fn input(&mut self, world: &mut World, frame: usize) {
        self.now = frame;
        // 1 % of the units get a new order.
        let orders = (self.units.len() / 100).max(1);
        for _ in 0..orders {
            let (unit, goal) = (self.random_unit(), self.random_cell());
            let request = PathRequest::to_cell(goal).with_policy(GoalPolicy::NearestReachable);
            self.order(world, unit, request);
        }
        if frame.is_multiple_of(300) {
            self.group_order(world);
        }
        if frame % 100 == 25 {
            // Five units follow others (some of whom are despawned while followed).
            for _ in 0..5 {
                let (unit, target) = (self.random_unit(), self.random_unit());
                self.order(world, unit, PathRequest::follow(target, 3.0));
            }
        }
        if frame.is_multiple_of(10) {
            self.toggle_cells(world, 3);
        }
        if frame.is_multiple_of(500) {
            for _ in 0..20 {
                let k = self.rng.below(self.units.len() as u32) as usize;
                let (key, unit) = self.units.swap_remove(k);
                // The game's requests not answered yet: the pending one, and those replaced
                // or answered whose outcome was still to come.
                let answered = world.resource::<Outcomes>().per_unit.get(key);
                self.vanish(key, self.given.get(key).saturating_sub(answered));
                world.despawn(unit);
            }
            for _ in 0..20 {
                self.spawn(world, true);
            }
        }
        if frame.is_multiple_of(50) {
            // A request outside the map, and three orders in one frame (two end cancelled).
            let unit = self.random_unit();
            let s = self.size as i32;
            self.order(world, unit, PathRequest::to_cell(Cell::new(-3, s + 7)));
            self.bad_requests += 1;
            let unit = self.random_unit();
            for _ in 0..3 {
                let goal = self.random_cell();
                let request = PathRequest::to_cell(goal).with_policy(GoalPolicy::NearestReachable);
                self.order(world, unit, request);
            }
        }
    }

    /// 200 random units (fewer if there are not that many) ordered to a random point.
    fn group_order(&mut self, world: &mut World) {
        let n = self.units.len().min(200);
        let mut picked: Vec<Entity> = Vec::with_capacity(n);
        while picked.len() < n {
            let unit = self.random_unit();
            if !picked.contains(&unit) {
                picked.push(unit);
            }
        }
        let units: Vec<(Entity, Vec2)> = picked
            .iter()
            .map(|&e| {
                let t = world.get::<Transform>(e).expect("a unit");
                (e, t.translation.truncate())
            })
            .collect();
        let target = {
            let c = self.random_cell();
            world
                .get::<NavMap>(self.map)
                .expect("the map")
                .cell_to_world(c)
        };
        let requests = {
            let map = world.get::<NavMap>(self.map).expect("the map");
            group_order(map, target, &units)
        };
        for (unit, request) in requests {
            self.order(world, unit, request);
        }
        self.group_orders += 1;
    }

    /// `count` random cells toggled (blocked or opened), each at least two cells (Chebyshev)
    /// from every unit's cell.
    fn toggle_cells(&mut self, world: &mut World, count: usize) {
        let positions: Vec<Vec2> = world
            .query_filtered::<&Transform, With<Mover>>()
            .iter(world)
            .map(|t| t.translation.truncate())
            .collect();
        let occupied: std::collections::HashSet<Cell> = {
            let map = world.get::<NavMap>(self.map).expect("the map");
            positions
                .iter()
                .filter_map(|&p| map.world_to_cell(p))
                .collect()
        };
        let near_unit = |c: Cell| {
            (-1..=1).any(|dy| (-1..=1).any(|dx| occupied.contains(&(c + Cell::new(dx, dy)))))
        };
        let mut done = 0;
        for _ in 0..count * 20 {
            if done == count {
                break;
            }
            let c = self.random_cell();
            if near_unit(c) {
                continue;
            }
            let mut map = world.get_mut::<NavMap>(self.map).expect("the map");
            let open = map.grid().is_walkable(c);
            map.set_walkable(c, !open).expect("in bounds");
            if !open {
                self.opened.insert(c, self.now);
            }
            if std::env::var_os("SOAK_VERBOSE").is_some() {
                eprintln!("toggle {c:?} to {}", if open { "blocked" } else { "open" });
            }
            done += 1;
            self.edits += 1;
        }
    }
}

/// The global allocator, counting the bytes live on the heap: beside the resident memory, it
/// tells growth the program holds (a leak) from pages the allocator keeps (fragmentation).
struct Counting;

/// Bytes allocated and not yet freed.
static LIVE_HEAP: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call goes to `System` with the caller's arguments; the counter is only added to.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE_HEAP.fetch_add(layout.size(), Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE_HEAP.fetch_add(layout.size(), Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(ptr, layout) };
        LIVE_HEAP.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE_HEAP.fetch_sub(layout.size(), Relaxed);
            LIVE_HEAP.fetch_add(new_size, Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Least-squares slope of `y` over `x`.
fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), &(x, y)| (a + x / n, b + y / n));
    let (num, den) = points.iter().fold((0.0, 0.0), |(a, b), &(x, y)| {
        (a + (x - mx) * (y - my), b + (x - mx) * (x - mx))
    });
    if den == 0.0 { 0.0 } else { num / den }
}

/// The app: the plugins with `settings` in `schedule`, stepping 1/60 s a frame, counting
/// outcomes (into the [`Outcomes`] the caller inserts).
fn new_app(settings: &TilepathSettings, schedule: TilepathSchedule, threads: usize) -> App {
    let period = Duration::from_secs_f64(1.0 / 60.0);
    let mut app = App::new();
    app.add_plugins(common::minimal_plugins(threads))
        .insert_resource(TimeUpdateStrategy::ManualDuration(period))
        .insert_resource(Time::<Fixed>::from_duration(period))
        .insert_resource(settings.clone())
        .add_plugins(TilepathPlugins { schedule })
        .register_type::<Key>()
        .add_systems(
            schedule.0,
            count_outcomes
                .after(TilepathSystems::Receive)
                .before(TilepathSystems::Last),
        );
    app
}

/// Saves the game at the end of a frame and goes on in a new app that loads it, as a player
/// who saves, quits and loads would: the game's entities and outcome counts follow. Prints
/// `saved frame=<n> bytes=<n> save_ms=<f> load_ms=<f>`.
#[cfg(feature = "serialize")]
fn save_and_reload(
    app: &mut App,
    game: &mut Game,
    settings: &TilepathSettings,
    schedule: TilepathSchedule,
    frame: usize,
    threads: usize,
) {
    let t = Instant::now();
    let ron = common::saved_game::save(app.world_mut()).unwrap_or_else(|e| {
        eprintln!("error: saving: {e}");
        std::process::exit(1);
    });
    let save_ms = t.elapsed().as_secs_f64() * 1000.0;
    let mut loaded = new_app(settings, schedule, threads);
    let outcomes = app
        .world_mut()
        .remove_resource::<Outcomes>()
        .expect("outcomes");
    loaded.insert_resource(outcomes);
    let t = Instant::now();
    let ids = common::saved_game::load(loaded.world_mut(), &ron).unwrap_or_else(|e| {
        eprintln!("error: loading: {e}");
        std::process::exit(1);
    });
    let load_ms = t.elapsed().as_secs_f64() * 1000.0;
    game.map = ids[&game.map];
    for (_, e) in &mut game.units {
        *e = ids[e];
    }
    *app = loaded;
    println!(
        "saved frame={frame} bytes={} save_ms={save_ms:.1} load_ms={load_ms:.1}",
        ron.len()
    );
}

/// The share of `map`'s cells that are blocked, in percent.
fn blocked_pct(world: &World, map: Entity) -> f64 {
    let grid = world.get::<NavMap>(map).expect("the map").grid();
    let (w, h) = (grid.width() as i32, grid.height() as i32);
    let blocked = (0..h)
        .flat_map(|y| (0..w).map(move |x| Cell::new(x, y)))
        .filter(|&c| !grid.is_walkable(c))
        .count();
    100.0 * blocked as f64 / (w * h) as f64
}

/// What the runner sees of the vehicles frame to frame: how far they drove, how sharply they
/// turned against their turning radius, and whether any turned without moving.
#[derive(Default)]
struct DriveTally {
    /// Where each vehicle was and which way it faced last frame, by the game's key (a loaded
    /// game's entities are new).
    last: bevy::platform::collections::HashMap<u32, (Vec2, Vec2)>,
    vehicles: usize,
    tiles: f64,
    /// The sharpest turn seen, as the heading's change over the distance driven, times the
    /// turning radius (at most 1 for a legal arc).
    max_turn_ratio: f32,
    /// Vehicle-frames whose heading changed while the vehicle stood still.
    in_place_turns: u64,
    /// Vehicle-frames spent waiting for a plan.
    planning: u64,
}

impl DriveTally {
    fn frame(&mut self, key: u32, pos: Vec2, heading: Vec2, radius: f32) {
        let Some((before, facing)) = self.last.insert(key, (pos, heading)) else {
            self.vehicles += 1;
            return;
        };
        let moved = pos.distance(before);
        let turned = facing.angle_to(heading).abs();
        self.tiles += f64::from(moved);
        if turned > 1e-3 && moved < 1e-4 {
            self.in_place_turns += 1;
        } else if moved > 1e-3 {
            self.max_turn_ratio = self.max_turn_ratio.max(turned * radius / moved);
        }
    }

    fn line(&self) -> String {
        format!(
            "vehicles count={} tiles_driven={:.0} planning_frames={} max_turn_ratio={:.3} in_place_turns={}",
            self.vehicles, self.tiles, self.planning, self.max_turn_ratio, self.in_place_turns
        )
    }
}

fn main() {
    let args = match Args::parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let mut rng = Rng::new(args.seed);
    let grid = generate(args.size, &mut rng);
    let settings = TilepathSettings {
        workers: if args.workers == 0 {
            WorkerMode::Inline
        } else {
            WorkerMode::Async {
                max_in_flight: args.workers,
            }
        },
        lockstep: args.lockstep.then(Lockstep::default),
        jump_tables: !args.no_jump_tables,
        ..Default::default()
    };
    let period = Duration::from_secs_f64(1.0 / 60.0);
    // Lockstep: the fixed timestep is the frame, so every frame is one tick.
    let schedule = if args.lockstep {
        TilepathSchedule::new(FixedUpdate)
    } else {
        TilepathSchedule::new(Update)
    };
    let mut app = new_app(&settings, schedule, args.threads);
    app.insert_resource(Outcomes {
        // Orders, group orders, respawns and bad requests, and the plugin's own requests
        // (which take tickets too), with room to spare.
        answered: TicketBits::new((args.frames + args.drain) * (args.units as usize / 100 + 4) * 2),
        duplicates: 0,
        latency: Histogram::new(100_000),
        found: 0,
        failed: 0,
        cancelled: 0,
        own: 0,
        own_by_origin: Vec::new(),
        per_unit: PerUnit::default(),
    });
    let map = app
        .world_mut()
        .spawn(NavMap::new(grid, Vec2::ZERO, Vec2::splat(16.0)))
        .id();
    let mut game = Game {
        rng,
        map,
        size: args.size,
        units: Vec::new(),
        next_key: 0,
        vehicles: args.vehicles,
        requests: 0,
        vanished: 0,
        lost: 0,
        given: PerUnit::default(),
        given_at: Vec::new(),
        now: 0,
        bad_requests: 0,
        group_orders: 0,
        edits: 0,
        opened: Default::default(),
    };
    for _ in 0..args.units {
        game.spawn(app.world_mut(), false);
    }
    app.update();

    let total = args.frames + args.drain;
    // Sleeps between ticks from the wall clock, never from the game's seed.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let mut jitter =
        Rng::new(now.map_or(1, |d| d.as_nanos() as u64) ^ u64::from(std::process::id()));
    let warm_up = args.frames / 4;
    let (mut rests, mut rest_ages) = (Histogram::new(100_000), Histogram::new(100_000));
    // Frames from delivery until each rest was smoothed to its goal; rests that left unsmoothed
    // (all, and those older than 30 frames then).
    let mut rest_waits = Histogram::new(100_000);
    let (mut rests_abandoned, mut rests_late) = (0u64, 0u64);
    // Thread CPU time of the plugin's systems, in microseconds.
    let mut cpu_us = Histogram::new(100_000);
    let mut movement = MovementTally::new();
    let mut rss: Vec<(f64, f64)> = Vec::with_capacity(total / args.sample + 1);
    let mut heap: Vec<(f64, f64)> = Vec::with_capacity(total / args.sample + 1);
    let mut blocked_overlaps = 0u64;
    // Frames in which the queue waited more than 1 ms for a worker's due result (lockstep
    // mode), and the longest wait (ms).
    let mut waits = (0u64, 0f64);
    let mut drives = DriveTally::default();
    let mut walking_raw = 0u64;
    let mut seen_raw = 0u64;
    // The frame each unit's path (by ticket) was first seen in.
    let mut path_seen: std::collections::HashMap<Entity, (u64, usize)> = Default::default();
    let mut queue_max = 0usize;
    // The load through the run, by quarter of the input frames: expansions and searches, and
    // frames with a request waiting more than 60 frames (the queue behind).
    let mut load = [(0u64, 0u64, 0u64); 4];
    let blocked_at_start = blocked_pct(app.world(), game.map);
    let started = Instant::now();
    let verbose = std::env::var_os("SOAK_VERBOSE").is_some();
    for frame in 1..=total {
        let t = Instant::now();
        if frame <= args.frames {
            game.input(app.world_mut(), frame);
        }
        app.update();
        if args.jitter {
            std::thread::sleep(Duration::from_micros(jitter.below(4000) as u64));
        }
        let world = app.world_mut();
        if args.checksums > 0 && frame.is_multiple_of(args.checksums) {
            let c = world.resource::<NavChecksum>();
            println!("checksum tick={} value={:016x}", c.tick, c.value);
        }
        let stats = world.resource::<TilepathFrameStats>();
        rests.add(stats.refining);
        walking_raw += stats.walking_raw as u64;
        rest_ages.add(stats.oldest_rest_frames as usize);
        for &waited in &stats.smoothed_rests {
            rest_waits.add(waited as usize);
        }
        rests_late += stats.abandoned_rests.iter().filter(|&&w| w > 30).count() as u64;
        rests_abandoned += stats.abandoned_rests.len() as u64;
        cpu_us.add(stats.main_thread_cpu.as_micros() as usize);
        let waited = stats.worker_wait.as_secs_f64() * 1000.0;
        waits.0 += u64::from(waited > 1.0);
        waits.1 = waits.1.max(waited);
        movement.add(world.resource::<MovementFrameStats>());
        queue_max = queue_max.max(stats.queue_len);
        if frame <= args.frames {
            let q = &mut load[(4 * (frame - 1) / args.frames.max(1)).min(3)];
            q.0 += stats.expansions;
            q.1 += u64::from(stats.started);
            q.2 += u64::from(stats.oldest_wait_frames > 60);
        }
        if verbose && frame.is_multiple_of(250) {
            eprintln!(
                "frame {frame}: started={} finished={} searching={} queue_len={} oldest_wait={} refining={} plugin_ms={:.2} phases={:?}",
                stats.started,
                stats.finished,
                stats.searching,
                stats.queue_len,
                stats.oldest_wait_frames,
                stats.refining,
                stats.main_thread.as_secs_f64() * 1000.0,
                stats.phases
            );
        }
        {
            let map = world.get::<NavMap>(game.map).expect("the map").clone();
            let mut q = world.query::<(
                Entity,
                &Transform,
                &NavAgent,
                Option<&bevy_tilepath::PathProgress>,
                Option<&NavPath>,
                &PathStatus,
            )>();
            for (e, tf, agent, progress, path, status) in q.iter(world) {
                let seen = path.map(|path| {
                    let at = path_seen.entry(e).or_insert((path.ticket, frame));
                    if at.0 != path.ticket {
                        *at = (path.ticket, frame);
                    }
                    at.1
                });
                // Vehicles drive plans of their own, not the path's waypoints.
                if let (Some(p), Some(path), Some(seen)) = (progress, path, seen)
                    && p.state == MoveState::Moving
                    && world.get::<bevy_tilepath::Vehicle>(e).is_none()
                    && raw_waypoint(&map, path, p.waypoint, agent.radius)
                    && !opened_near(&game.opened, path, p.waypoint, &map, seen)
                {
                    seen_raw += 1;
                }
                let pos = map.world_to_grid(tf.translation.truncate());
                if let Some(vehicle) = world.get::<bevy_tilepath::Vehicle>(e) {
                    let heading = (tf.rotation * Vec3::X).truncate();
                    let key = world.get::<Key>(e).map_or(u32::MAX, |k| k.0);
                    drives.frame(key, pos, heading, vehicle.turning_radius);
                    let status = world
                        .get::<bevy_tilepath::DriveProgress>(e)
                        .map(|d| d.status);
                    drives.planning +=
                        u64::from(status == Some(bevy_tilepath::DriveStatus::Planning));
                }
                let over = common::in_wall(map.grid(), pos, agent.radius);
                blocked_overlaps += u64::from(over);
                if over && verbose {
                    let c = map.grid().cell_at(pos);
                    let near: Vec<Cell> = (-1..=1)
                        .flat_map(|dy| (-1..=1).map(move |dx| c + Cell::new(dx, dy)))
                        .filter(|&n| !map.grid().is_walkable(n))
                        .collect();
                    eprintln!(
                        "frame {frame} {e:?} at {pos} blocked near {near:?} {status:?} {:?} waypoint {:?} path origin {:?} waypoints {:?}",
                        progress.map(|p| p.state),
                        progress.map(|p| p.waypoint),
                        path.map(|p| p.origin),
                        path.map(|p| p
                            .waypoints
                            .iter()
                            .map(|w| map.world_to_grid(*w))
                            .collect::<Vec<_>>()),
                    );
                }
            }
        }
        #[cfg(feature = "serialize")]
        if frame == args.save_at {
            save_and_reload(
                &mut app,
                &mut game,
                &settings,
                schedule,
                frame,
                args.threads,
            );
        }
        if frame.is_multiple_of(args.sample) && frame > warm_up && frame <= args.frames {
            rss.push((frame as f64, common::resident_bytes() as f64 / 1e6));
            heap.push((frame as f64, LIVE_HEAP.load(Relaxed) as f64 / 1e6));
        }
        if args.workers > 0
            && let Some(rest) = period.checked_sub(t.elapsed())
        {
            std::thread::sleep(rest);
        }
    }
    let elapsed = started.elapsed();

    let world = app.world_mut();
    // The game's requests still without an outcome (the plugin's own, which units walking on
    // keep making, are not the game's).
    let pending = {
        let book = world.resource::<PendingRequests>();
        game.units
            .iter()
            .filter(|(_, e)| book.origin(*e).is_some_and(|o| o.is_user()))
            .count()
    };
    let checksum = {
        let mut q = world.query::<(&Key, &Transform)>();
        let mut units: Vec<(u32, Vec3)> =
            q.iter(world).map(|(k, t)| (k.0, t.translation)).collect();
        units.sort_by_key(|u| u.0);
        units.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, (k, p)| {
            [*k, p.x.to_bits(), p.y.to_bits()]
                .iter()
                .fold(h, |h, v| (h ^ *v as u64).wrapping_mul(0x100_0000_01b3))
        })
    };
    let o = world.resource::<Outcomes>();
    let answered: u64 = o.answered.0.iter().map(|w| w.count_ones() as u64).sum();
    // Across a save, a request queued again gets a new ticket: one answered before the save
    // and again after would count twice among the tickets answered.
    let duplicates = o.duplicates + (answered + game.vanished).saturating_sub(game.requests);
    let outcomes = answered + duplicates;
    let missing = game.requests.saturating_sub(answered + game.vanished);
    let growth = slope(&rss) * 10_000.0;
    let rss_last = rss.last().map_or(0.0, |r| r.1);
    let heap_growth = slope(&heap) * 10_000.0;
    let heap_last = heap.last().map_or(0.0, |r| r.1);
    println!(
        "requests game={} vanished_with_unit={} lost_before_despawn={} bad={} group_orders={} edits={} own_outcomes={} own_by_origin={} found={} failed={} cancelled={}",
        game.requests,
        game.vanished,
        game.lost,
        game.bad_requests,
        game.group_orders,
        game.edits,
        o.own,
        o.own_by_origin
            .iter()
            .map(|(k, n)| format!("{k:?}:{n}"))
            .collect::<Vec<_>>()
            .join(","),
        o.found,
        o.failed,
        o.cancelled
    );
    let by_quarter = |f: &dyn Fn(&(u64, u64, u64)) -> String| -> String {
        load.iter().map(f).collect::<Vec<_>>().join(",")
    };
    println!(
        "load blocked_pct_start={blocked_at_start:.1} blocked_pct_end={:.1} expansions_per_search_by_quarter={} searches_by_quarter={} behind_frames_by_quarter={}",
        blocked_pct(world, game.map),
        by_quarter(&|q| format!("{:.0}", q.0 as f64 / q.1.max(1) as f64)),
        by_quarter(&|q| q.1.to_string()),
        by_quarter(&|q| q.2.to_string()),
    );
    println!(
        "frames wall_s={:.1} p99_plugin_cpu_ms={:.3} max_plugin_cpu_ms={:.3} queue_max={queue_max} rss_mb_at_input_end={rss_last:.1} heap_mb_at_input_end={heap_last:.1} heap_growth_mb_per_10k={heap_growth:.2} worker_waits_over_1ms={} max_worker_wait_ms={:.3}",
        elapsed.as_secs_f64(),
        cpu_us.percentile(0.99) as f64 / 1000.0,
        cpu_us.percentile(1.0) as f64 / 1000.0,
        waits.0,
        waits.1,
    );
    // Of the rests still wanted 30 frames after their delivery, the share smoothed by then.
    let in_time = rest_waits.count_at_most(30);
    let wanted = rest_waits.count() + rests_late;
    // (No rest at all: every path came smoothed whole, as a worker's do.)
    let smoothed_30 = if wanted == 0 {
        100.0
    } else {
        100.0 * in_time as f64 / wanted as f64
    };
    println!("{}", movement.line());
    if args.vehicles > 0 {
        println!("{}", drives.line());
    }
    println!(
        "rests smoothed={} abandoned={rests_abandoned} abandoned_after_30={rests_late} wait_p50={} wait_p99={} wait_max={}",
        rest_waits.count(),
        rest_waits.percentile(0.5),
        rest_waits.percentile(0.99),
        rest_waits.percentile(1.0),
    );
    println!(
        "summary units={} workers={} frames={} requests={} outcomes={outcomes} duplicates={duplicates} missing={missing} pending_after_drain={pending} latency_p50={} latency_p99={} latency_max={} rests_max={} rest_age_p99={} rest_age_max={} rests_smoothed_30={smoothed_30:.2} walking_raw={walking_raw} seen_raw={seen_raw} blocked_overlaps={blocked_overlaps} rss_growth_mb_per_10k={growth:.2} checksum={checksum:016x}",
        args.units,
        args.workers,
        total,
        game.requests,
        o.latency.percentile(0.5),
        o.latency.percentile(0.99),
        o.latency.percentile(1.0),
        rests.percentile(1.0),
        rest_ages.percentile(0.99),
        rest_ages.percentile(1.0),
    );
    if duplicates > 0 || missing > 0 || pending > 0 {
        eprintln!("error: requests with more than one outcome, none, or still pending");
        std::process::exit(1);
    }
}

/// How many frames before a path is first seen its search or smoothing may have read the grid
/// (a request's wait and a worker's round trip, with room to spare).
const GRID_READ_SLACK: usize = 300;

/// Whether a cell within two of waypoint `i` was opened after `path`'s smoothing may have read
/// the grid (it was first seen in frame `seen`): the line past that waypoint was then blocked,
/// and the waypoint was no raw one when smoothed.
fn opened_near(
    opened: &std::collections::HashMap<Cell, usize>,
    path: &NavPath,
    i: usize,
    map: &NavMap,
    seen: usize,
) -> bool {
    let Some(b) = path.waypoints.get(i).and_then(|&w| map.world_to_cell(w)) else {
        return false;
    };
    (-2..=2).any(|dy| {
        (-2..=2).any(|dx| {
            opened
                .get(&(b + Cell::new(dx, dy)))
                .is_some_and(|&at| at + GRID_READ_SLACK >= seen)
        })
    })
}

/// Whether waypoint `i` of `path` is one smoothing would have dropped: a cell step from the
/// waypoints before and after it, with the body's line from the one before to the one after
/// clear of walls (checked with the body's whole radius, so a line only a class's shrunk body
/// clears does not count).
fn raw_waypoint(map: &NavMap, path: &NavPath, i: usize, radius: f32) -> bool {
    let at = |k: usize| path.waypoints.get(k).map(|&w| map.world_to_grid(w));
    let (Some(a), Some(b), Some(c)) = (i.checked_sub(1).and_then(at), at(i), at(i + 1)) else {
        return false;
    };
    let step = std::f32::consts::SQRT_2 + 1e-3;
    a.distance(b) <= step
        && b.distance(c) <= step
        && bevy_tilepath::core::walkable(map.grid_of(path.class), a, c, radius)
}
