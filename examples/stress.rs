//! Queue and movement load runner (headless).
//!
//! ```text
//! cargo run --release --example stress -- --units N --map-size S --budget-us B --workers W \
//!     [--group] [--no-share] [--smooth-first N|all] [--flat] [--move] [--edits K] [--seed X] \
//!     [--lockstep] [--worker-budget-us B] [--uniform] [--no-jumps] [--no-jump-tables] \
//!     [--no-lanes] [--searches-per-frame N] [--standing] [--battle] [--threads T]
//! ```
//!
//! Issues N requests in one frame on an S x S generated map with walls and terrain (random
//! starts and goals; with `--group` every unit starts in one cluster near the left edge and gets
//! one group order, through `group_order`, to a cell near the right edge), runs 60 Hz frames
//! until every request has an outcome, and prints as its last line
//! `summary requests=<n> outcomes=<n> found=<n> shared=<n> hierarchical=<n> jump_points=<n> failed=<n> cancelled=<n> frames_to_first=<n> frames_to_drain=<n> max_frame_ms=<f> p99_frame_ms=<f> budget_ms=<f> user_requests=<n> user_outcomes=<n>`
//! where `shared` counts paths read off a shared search, `hierarchical` those found through the
//! region map, `jump_points` those of a unit's own jump point search, `frames_to_first` is the frame of the
//! first path for a request of the game (a unit can move) and frame_ms is the main-thread time
//! spent in the plugin's systems in that frame. Every request must have exactly one outcome:
//! the run exits with status 1 if a request had two, if the requests have not all ended after
//! `--max-frames` frames (default 20,000), or if the requests the runner made
//! (`user_requests`) did not each get one (`user_outcomes`).
//! `W = 0` searches inline; `W > 0` on the async compute pool with up to W searches in flight.
//! `--no-share` turns shared searches off, `--smooth-first` sets how many cells of a path are
//! smoothed before delivery (`all`: whole paths, as before lazy smoothing): together they give
//! the plugin without shared searches and lazy smoothing, side by side. `--flat` turns the hierarchical search of
//! long requests off, `--no-lanes` a group's lanes (every member follows its shared search's corridor), `--no-jumps` jump point search (A* instead), `--no-jump-tables` its precomputed jump distances (JPS+: jumps are scanned instead), `--uniform` the map's forest
//! and swamp (plain ground everywhere: jump point search runs on grids of one terrain only).
//! The requests are made once the map's region map is built, as a game's
//! units get orders after its map has loaded (a `regions` line says how long it took).
//! With `--move`, every unit also gets a `Mover` and the run goes on for `--move-frames` frames
//! (default 300) while they walk with claims; a `move` line reports the movement systems' time
//! and the crowd: `unit_overlaps` (unit-frames in which a unit's body overlaps another's by more
//! than a fifth of the sum of their radii), `walk_through_frames` (unit-frames spent walking
//! through other units, the crowd's last resort), the fastest any unit moved from one frame to
//! the next (`max_unit_speed`, tiles per second), the unit-frames a unit moved faster than 1.5 x
//! its speed (`fast_unit_frames`) and those it moved more than half a tile (`jump_frames`).
//! A `move_phases` line breaks the movement systems' time down as the plugin reports it
//! (`MovementFrameStats`): the mean of each phase over the frames with units on their way, the
//! mean units moving, standing and asleep (standing with nothing to do), the time per moving
//! unit, and the time per standing unit over the frames in which every unit stood (with
//! `--standing`, every unit's order is to the cell it stands on: a standing army).
//! `--battle` (with `--move`) is the big-battle preset: the units in eight armies round the
//! map, each army given one group order to where the army opposite stands, so they cross and
//! meet in the middle, where a unit within 5 tiles of an enemy stops and holds its position, and
//! falls (is despawned) with odds of one in 240 a frame; a `battle` line reports them. After
//! `--move-frames` frames every unit stops (a `ceasefire` line says how many requests were
//! waiting then, by who asked for them) and the run waits for the last outcomes; with
//! `--verbose`, a `queue` line every 100 frames gives the requests waiting by who asked for
//! them, and the searches started and finished, the expansions and the counted work of the
//! frames since the line before. The eight armies of 2,000 on
//! 1024 x 1024 that big RTS games field: `--units 16000 --map-size 1024 --move --battle`.
//! A `memory` line reports the process's resident memory, and what the map added to it per cell
//! (from before it was spawned until its region map was ready) and the units per unit (from
//! then to the end).
//! With `--gates` the map is open ground with a wall every 24 columns, each with two gaps 3
//! cells wide; with `--group --move` as well, a `crowd` line reports the median unit's time to
//! the goal area, a lone unit's time, the gaps' capacity (units through per second) and whether
//! the median is within 1.5 x the lone time plus the crowd's time through the gaps (a capacity
//! only as real as the `move` line's speeds: a crowd that jumps through a gap passes faster
//! than it walks).
//! `--mixed` (with `--move`) gives one unit in eight a body two tiles across (a class of
//! footprint 1, to which the gates are one cell wide), as the RTS demo's tanks. `--cross` (with
//! `--group --move --gates`) orders one unit in ten back home 15 s after the orders, against
//! the stream jammed at the gates.
//! `--avoidance` turns local avoidance on, `--no-pushing` turns pushing off. `--lockstep` runs
//! the plugin group in `FixedUpdate` (a tick a frame) in lockstep mode
//! ([`TilepathSettings::lockstep`]): budgets count work instead of timing it, worker results
//! come a fixed number of ticks after they are handed off, as many as the work handed off is
//! expected to take at `--worker-budget-us` microseconds of counted work a runner a tick
//! ([`Lockstep::worker_budget`](bevy_tilepath::Lockstep::worker_budget); default the plugin's).
//! With `--edits K` (needs `--move`), every K frames a short wall goes down across a route in use
//! (the wall from three edits before comes down), and an `edits` line reports `wall_overlaps`:
//! unit-frames in which a unit's body overlaps a blocked cell.
//! `--threads T` gives Bevy's task pools T threads in all (by default, as many as the machine
//! has cores; on two cores that leaves the compute pool, where movement spreads its work, one
//! thread, and `--threads 4` gives it two).
//! With `--calibrate`, every frame also times (thread CPU time, as the plugin's frames) two fixed
//! pieces of work on the main thread that each take the budget at their median: plain
//! arithmetic (`spin`) and a pointer chase through 8 MiB (`chase`, memory-bound like a search
//! on a big map, so slowed when other tenants evict the caches). The `calibration` lines report
//! how long they took: the machine's own noise, measured side by side with the plugin's frames,
//! and `work=`, how much of each fit the budget at the run's start (spin iterations, chase
//! steps): the machine's speed that day, to compare runs made on other days by.

#[path = "common/mod.rs"]
mod common;

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_tilepath::core::{Cell, NavGrid, SearchConfig, cell_at, group_center, spread_slots};
use bevy_tilepath::prelude::*;
use bevy_tilepath::{
    MovementFrameStats, NavAgent, PathProgress, PendingRequests, SearchKind, TilepathFrameStats,
};
use common::battle::{self, ARMIES, Army, Combat};
use common::{CrowdFrame, CrowdWatch, Rng, percentile, thread_cpu};

/// Walls as long lines with gaps, forest and swamp patches, on plain ground.
fn generate(size: u32, rng: &mut Rng, uniform: bool) -> NavGrid {
    let mut grid = NavGrid::new(size, size).expect("valid size");
    let s = size as i32;
    for _ in 0..size / 8 {
        let (x, y) = (rng.below(size) as i32, rng.below(size) as i32);
        let len = 8 + rng.below(size / 4) as i32;
        let horizontal = rng.below(2) == 0;
        for k in 0..len {
            if k % 13 == 6 {
                continue; // gaps
            }
            let c = if horizontal {
                Cell::new(x + k, y)
            } else {
                Cell::new(x, y + k)
            };
            if c.x < s && c.y < s {
                grid.set_walkable(c, false).expect("in bounds");
            }
        }
    }
    // (With `--uniform`, the patches are drawn but left plain ground: the same walls.)
    for (terrain, patches) in [(3u8, size / 16), (6u8, size / 32)] {
        let terrain = if uniform { 1 } else { terrain };
        for _ in 0..patches {
            let (cx, cy, r) = (
                rng.below(size) as i32,
                rng.below(size) as i32,
                3 + rng.below(8) as i32,
            );
            for y in cy - r..=cy + r {
                for x in cx - r..=cx + r {
                    let c = Cell::new(x, y);
                    if grid.is_walkable(c) && (c - Cell::new(cx, cy)).length_squared() <= r * r {
                        grid.set_terrain(c, terrain).expect("in bounds");
                    }
                }
            }
        }
    }
    grid
}

/// Tiles per second of the units of `--move`.
const UNIT_SPEED: f32 = 6.0;

/// `--mixed`: one unit in this many has a wide body (a tank among infantry, as in the RTS
/// demo's `--mixed`).
const WIDE_EVERY: usize = 8;

/// `--mixed`: a wide unit's body radius in tiles (footprint 1).
const WIDE_RADIUS: f32 = 0.9;

/// Gate columns of `--gates`: every 24 columns from 24 (the last at least 24 from the edge).
fn gate_columns(size: u32) -> impl Iterator<Item = i32> {
    (1..)
        .map(|k| 24 * k)
        .take_while(move |&x| x + 24 <= size as i32)
}

/// `--gates`: open ground with a wall every 24 columns, each with two gaps 3 cells wide (a
/// third and two thirds of the way up).
fn gates(size: u32) -> NavGrid {
    let mut grid = NavGrid::new(size, size).expect("valid size");
    let s = size as i32;
    for x in gate_columns(size) {
        for y in 0..s {
            let in_gap = [s / 3, 2 * s / 3].iter().any(|&g| (y - g).abs() <= 1);
            if !in_gap {
                grid.set_walkable(Cell::new(x, y), false)
                    .expect("in bounds");
            }
        }
    }
    grid
}

#[derive(Resource, Default)]
struct Tally {
    /// Outcomes per request ticket: must all be 1.
    per_ticket: HashMap<u64, u32>,
    found: u32,
    failed: u32,
    cancelled: u32,
    /// Found paths by the search that found them (shared, hierarchical; the rest own).
    shared: u32,
    hierarchical: u32,
    jump_points: u32,
    /// Frames seen so far.
    frames: usize,
    /// The frame of the first path found for a game's request (a unit can move).
    first_found: Option<usize>,
    /// Requests the runner made (each insert of a `PathRequest`), and outcomes of the game's
    /// requests: every request the runner made ends in exactly one outcome.
    user_requests: u32,
    user_outcomes: u32,
}

/// Counts the requests the runner makes (see [`Tally::user_requests`]).
fn count_request(_: On<Insert, PathRequest>, mut t: ResMut<Tally>) {
    t.user_requests += 1;
}

fn tally(mut reader: MessageReader<PathOutcome>, mut t: ResMut<Tally>) {
    t.frames += 1;
    for o in reader.read() {
        *t.per_ticket.entry(o.ticket).or_default() += 1;
        if o.origin.is_user() {
            t.user_outcomes += 1;
        }
        match o.kind {
            OutcomeKind::Found { search, .. } => {
                t.found += 1;
                match search {
                    SearchKind::Shared => t.shared += 1,
                    SearchKind::Hierarchical => t.hierarchical += 1,
                    SearchKind::JumpPoints => t.jump_points += 1,
                    SearchKind::Own => {}
                }
                if o.origin.is_user() && t.first_found.is_none() {
                    t.first_found = Some(t.frames);
                }
            }
            OutcomeKind::Failed(_) => t.failed += 1,
            OutcomeKind::Cancelled => t.cancelled += 1,
        }
    }
}

/// The movement systems' wall time each frame, and their phases as the plugin reports them
/// ([`MovementFrameStats`]).
#[derive(Resource, Default)]
struct MoveTimer {
    start: Option<Instant>,
    frames: Vec<f64>,
    phases: Vec<MovementFrameStats>,
}

fn move_start(mut t: ResMut<MoveTimer>) {
    t.start = Some(Instant::now());
}

fn move_end(mut t: ResMut<MoveTimer>, stats: Res<MovementFrameStats>) {
    if let Some(s) = t.start.take() {
        let ms = s.elapsed().as_secs_f64() * 1000.0;
        t.frames.push(ms);
        t.phases.push(stats.clone());
    }
}

/// Microseconds per standing unit a frame of one phase over `frames`: the phase's time over
/// the standing unit-frames (a mean of each frame's ratio would let a frame with a handful of
/// units standing outweigh thousands of frames with the whole army).
fn per_standing(frames: &[&MovementFrameStats], phase: fn(&MovementFrameStats) -> Duration) -> f64 {
    let us: f64 = frames.iter().map(|p| phase(p).as_secs_f64() * 1e6).sum();
    let unit_frames: f64 = frames.iter().map(|p| p.standing as f64).sum();
    us / unit_frames.max(1.0)
}

/// The `move_phases` line: the mean of each phase over the frames with units on their way, the
/// mean per moving unit (all phases, over those frames) and per standing unit (over the frames
/// with every unit standing, if any).
fn phases_line(phases: &[MovementFrameStats]) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let busy: Vec<&MovementFrameStats> = phases.iter().filter(|p| p.moving > 0).collect();
    let n = busy.len().max(1) as f64;
    let mean =
        |f: fn(&MovementFrameStats) -> Duration| busy.iter().map(|p| ms(f(p))).sum::<f64>() / n;
    let per_moving_us = busy
        .iter()
        .map(|p| ms(p.total()) * 1000.0 / p.moving as f64)
        .sum::<f64>()
        / n;
    let still: Vec<&MovementFrameStats> = phases
        .iter()
        .filter(|p| p.moving == 0 && p.standing > 0)
        .collect();
    let per_standing_us = per_standing(&still, MovementFrameStats::total);
    format!(
        "move_phases frames_moving={} release_ms={:.3} index_ms={:.3} steps_ms={:.3} push_ms={:.3} facing_ms={:.3} mean_moving={:.0} mean_standing={:.0} mean_asleep={:.0} us_per_moving_unit={per_moving_us:.3} frames_all_standing={} us_per_standing_unit={per_standing_us:.4} (steps {:.4} push {:.4} facing {:.4})",
        busy.len(),
        mean(|p| p.release),
        mean(|p| p.index),
        mean(|p| p.steps),
        mean(|p| p.push),
        mean(|p| p.facing),
        busy.iter().map(|p| p.moving as f64).sum::<f64>() / n,
        busy.iter().map(|p| p.standing as f64).sum::<f64>() / n,
        busy.iter().map(|p| p.asleep as f64).sum::<f64>() / n,
        still.len(),
        per_standing(&still, |p| p.steps),
        per_standing(&still, |p| p.push),
        per_standing(&still, |p| p.facing),
    )
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::max)
}

/// Spins `iterations` rounds of a linear congruential generator (plain arithmetic, no memory).
fn spin(iterations: u64) -> u64 {
    let mut x = std::hint::black_box(1u64);
    for _ in 0..iterations {
        x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
    }
    x
}

/// Thread CPU time of `f`, in milliseconds.
fn cpu_ms_of(f: impl FnOnce()) -> f64 {
    let t = thread_cpu();
    f();
    (thread_cpu() - t).as_secs_f64() * 1000.0
}

/// A pointer chase through a random cycle over [`CHASE_LEN`] cells: memory-bound work, like a
/// search's reads of a 512 x 512 map's arrays, which (unlike [`spin`]) slows down when other
/// tenants of the machine evict its cache lines.
struct Chase {
    next: Vec<u32>,
    /// Where the last run stopped: each run goes on along the cycle, so no run finds the cells
    /// of the one before in the caches.
    at: std::cell::Cell<u32>,
}

/// Cells of [`Chase`]'s table: 8 MiB, beyond the core's L2 cache, within a quiet L3.
const CHASE_LEN: usize = 1 << 21;

impl Chase {
    fn new() -> Self {
        // Sattolo's shuffle: one cycle through every cell.
        let mut order: Vec<u32> = (0..CHASE_LEN as u32).collect();
        let mut rng = Rng::new(7);
        for i in (1..CHASE_LEN).rev() {
            let j = rng.below(i as u32) as usize;
            order.swap(i, j);
        }
        let mut next = vec![0u32; CHASE_LEN];
        for i in 0..CHASE_LEN {
            next[order[i] as usize] = order[(i + 1) % CHASE_LEN];
        }
        Chase {
            next,
            at: std::cell::Cell::new(0),
        }
    }

    /// Follows `steps` links on from where the last run stopped.
    fn run(&self, steps: u64) {
        let mut at = self.at.get();
        for _ in 0..steps {
            at = self.next[at as usize];
        }
        self.at.set(std::hint::black_box(at));
    }
}

/// `--calibrate`'s two fixed pieces of work, each sized to take the budget at its median.
struct Calibration {
    /// Iterations of [`spin`].
    spins: u64,
    chase: Chase,
    /// Steps of the chase.
    steps: u64,
}

impl Calibration {
    fn for_budget(budget: Duration) -> Self {
        let chase = Chase::new();
        let spins = units_for(budget, |n| {
            spin(n);
        });
        let steps = units_for(budget, |n| chase.run(n));
        Calibration {
            spins,
            chase,
            steps,
        }
    }
}

/// Units of `work` (spin iterations, chase steps) that take `budget` of thread CPU time: the
/// median of 21 timed trials.
fn units_for(budget: Duration, work: impl Fn(u64)) -> u64 {
    let probe = 100_000;
    let mut times: Vec<f64> = (0..21).map(|_| cpu_ms_of(|| work(probe))).collect();
    times.sort_by(f64::total_cmp);
    (probe as f64 * budget.as_secs_f64() * 1000.0 / times[10]) as u64
}

const USAGE: &str = "usage: stress [--units N] [--map-size S] [--budget-us B] [--workers W] [--seed X] [--group] [--no-share] [--smooth-first N|all] [--flat] [--edits K] [--move] [--move-frames N] [--max-frames N] [--gates] [--mixed] [--cross] [--avoidance] [--no-pushing] [--calibrate] [--verbose] [--lockstep] [--worker-budget-us B] [--uniform] [--no-jumps] [--no-jump-tables] [--no-lanes] [--searches-per-frame N] [--standing] [--battle] [--threads T]";

/// The command line.
struct Args {
    units: u32,
    size: u32,
    budget_us: u64,
    workers: usize,
    seed: u64,
    move_frames: u32,
    standing: bool,
    /// `--battle`: the big-battle preset (see the module docs).
    battle: bool,
    /// `--threads T`: the task pools' threads in all (0: Bevy's default).
    threads: usize,
    /// `--max-frames`: a run whose requests have not all ended by then fails.
    max_frames: usize,
    moving: bool,
    group: bool,
    share: bool,
    /// `--flat`: no hierarchical search.
    flat: bool,
    /// `--uniform`: no forest or swamp patches.
    uniform: bool,
    /// `--no-jumps`: A* instead of jump point search.
    no_jumps: bool,
    /// `--no-jump-tables`: jump point search scans (no JPS+ tables).
    no_jump_tables: bool,
    /// `--searches-per-frame`: searches started per frame at most (8 inline, 64 with workers).
    searches_per_frame: Option<usize>,
    /// `--no-lanes`: group members follow the shared search's corridor.
    no_lanes: bool,
    smooth_first: usize,
    edits: usize,
    calibrate: bool,
    verbose: bool,
    lockstep: bool,
    /// `--worker-budget-us`: the lockstep runners' counted work a tick.
    worker_budget_us: Option<u64>,
    /// `--avoidance`: local avoidance on (off by default).
    avoidance: bool,
    /// `--no-pushing`: units do not push each other.
    pushing: bool,
    /// `--gates`: the map is walls every 24 columns with two 3-cell gaps each.
    gates: bool,
    /// `--mixed` (with `--move`): one unit in [`WIDE_EVERY`] has a wide body.
    mixed: bool,
    /// `--cross` (with `--group --move --gates`): one unit in [`CROSS_EVERY`] is ordered back
    /// home across the stream [`CROSS_AT`] frames after the orders.
    cross: bool,
}

impl Args {
    fn parse() -> Result<Args, String> {
        use lexopt::prelude::*;
        let mut a = Args {
            units: 2000,
            size: 512,
            budget_us: 2000,
            workers: 0,
            seed: 1,
            move_frames: 300,
            standing: false,
            battle: false,
            threads: 0,
            max_frames: 20_000,
            moving: false,
            group: false,
            share: true,
            flat: false,
            uniform: false,
            no_jumps: false,
            no_jump_tables: false,
            searches_per_frame: None,
            no_lanes: false,
            smooth_first: TilepathSettings::default().smooth_before_delivery,
            edits: 0,
            calibrate: false,
            verbose: false,
            lockstep: false,
            worker_budget_us: None,
            avoidance: false,
            pushing: true,
            gates: false,
            mixed: false,
            cross: false,
        };
        let mut parser = lexopt::Parser::from_env();
        while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
            match arg {
                Long("units") => a.units = common::value(&mut parser, "--units")?,
                Long("map-size") => a.size = common::value(&mut parser, "--map-size")?,
                Long("budget-us") => a.budget_us = common::value(&mut parser, "--budget-us")?,
                Long("workers") => a.workers = common::value(&mut parser, "--workers")?,
                Long("seed") => a.seed = common::value(&mut parser, "--seed")?,
                Long("move-frames") => a.move_frames = common::value(&mut parser, "--move-frames")?,
                Long("standing") => a.standing = true,
                Long("battle") => a.battle = true,
                Long("threads") => a.threads = common::value(&mut parser, "--threads")?,
                Long("max-frames") => a.max_frames = common::value(&mut parser, "--max-frames")?,
                Long("move") => a.moving = true,
                Long("group") => a.group = true,
                Long("no-share") => a.share = false,
                Long("flat") => a.flat = true,
                Long("uniform") => a.uniform = true,
                Long("no-jumps") => a.no_jumps = true,
                Long("no-jump-tables") => a.no_jump_tables = true,
                Long("searches-per-frame") => {
                    a.searches_per_frame = Some(common::value(&mut parser, "--searches-per-frame")?)
                }
                Long("no-lanes") => a.no_lanes = true,
                Long("smooth-first") => {
                    let v: String = common::value(&mut parser, "--smooth-first")?;
                    a.smooth_first = if v == "all" {
                        usize::MAX
                    } else {
                        v.parse()
                            .map_err(|_| format!("--smooth-first {v}: a number or all"))?
                    };
                }
                Long("edits") => a.edits = common::value(&mut parser, "--edits")?,
                Long("calibrate") => a.calibrate = true,
                Long("avoidance") => a.avoidance = true,
                Long("no-pushing") => a.pushing = false,
                Long("gates") => a.gates = true,
                Long("mixed") => a.mixed = true,
                Long("cross") => a.cross = true,
                Long("verbose") => a.verbose = true,
                Long("lockstep") => a.lockstep = true,
                Long("worker-budget-us") => {
                    a.worker_budget_us = Some(common::value(&mut parser, "--worker-budget-us")?)
                }
                other => return Err(common::unexpected(other)),
            }
        }
        if a.size < 8 {
            return Err(format!("--map-size {} is below 8", a.size));
        }
        if a.mixed && !a.moving {
            return Err("--mixed needs --move (wide bodies only matter to movement)".into());
        }
        if a.edits > 0 && !a.moving {
            return Err("--edits needs --move (walls go across routes units walk)".into());
        }
        if a.battle && (!a.moving || a.group || a.gates || a.standing) {
            return Err("--battle needs --move, and no --group, --gates or --standing".into());
        }
        if a.standing && (!a.moving || a.group) {
            return Err("--standing needs --move and random orders (each unit's own cell)".into());
        }
        Ok(a)
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
    let grid = if args.gates {
        gates(args.size)
    } else {
        generate(args.size, &mut rng, args.uniform)
    };
    let mut app = build_app(&args);
    let rss_before = common::resident_bytes();
    let map = NavMap::new(grid, Vec2::ZERO, Vec2::splat(16.0));
    let (orders, trip, armies): (Vec<_>, _, Vec<Army>) = if args.battle {
        let (orders, armies) = battle::orders(&map, args.size, args.units)
            .into_iter()
            .map(|(start, request, army)| ((start, request), army))
            .unzip();
        (orders, None, armies)
    } else if args.group {
        let (orders, trip) = group_orders(&map, &args);
        (orders, Some(trip), Vec::new())
    } else {
        (random_orders(map.grid(), &mut rng, &args), None, Vec::new())
    };
    let grid_copy = map.grid().clone();
    let mut trips = trip.filter(|_| args.gates && args.moving).and_then(|t| {
        let start_x = orders.iter().map(|(c, _)| c.x).max().unwrap_or(0);
        CrowdTrips::new(t, args.size, args.units, start_x)
    });
    let map = app.world_mut().spawn(map).id();
    // The longest frame while the map loads (its tables are built then).
    let timed = |app: &mut App| {
        let t = Instant::now();
        app.update();
        t.elapsed().as_secs_f64() * 1000.0
    };
    let mut max_load_ms = timed(&mut app);
    if !args.flat {
        // Orders come once the map has loaded: wait for its region map.
        let t = Instant::now();
        let mut frames = 1;
        while app
            .world()
            .resource::<bevy_tilepath::PathQueue>()
            .region_map(map)
            .is_none()
        {
            std::thread::sleep(Duration::from_millis(1));
            max_load_ms = max_load_ms.max(timed(&mut app));
            frames += 1;
        }
        let nodes = app
            .world()
            .resource::<bevy_tilepath::PathQueue>()
            .region_map(map)
            .map_or(0, |r| r.node_count());
        println!(
            "regions ready_after_ms={:.1} frames={frames} nodes={nodes} max_load_frame_ms={max_load_ms:.1}",
            t.elapsed().as_secs_f64() * 1000.0
        );
        // Frames count from the orders.
        app.world_mut().resource_mut::<Tally>().frames = 0;
    }
    let rss_loaded = common::resident_bytes();
    let units = orders.len();
    for (k, (start, request)) in orders.into_iter().enumerate() {
        let pos = (start.as_vec2() + 0.5) * 16.0;
        let mut e = app
            .world_mut()
            .spawn((Transform::from_xyz(pos.x, pos.y, 0.0), request));
        if let Some(&army) = armies.get(k) {
            e.insert(army);
        }
        if args.moving {
            e.insert(Mover {
                speed: UNIT_SPEED,
                ..Default::default()
            });
        }
        if args.mixed && k % WIDE_EVERY == WIDE_EVERY - 1 {
            // A tank: two tiles across (a class of footprint 1, a gate three tiles wide is one
            // cell wide on its grid), turning wider.
            e.insert((
                NavAgent {
                    radius: WIDE_RADIUS,
                },
                Mover {
                    speed: UNIT_SPEED,
                    turning_radius: 1.0,
                    ..Default::default()
                },
            ));
        }
    }
    let mut edits = (args.edits > 0).then(|| Edits::new(args.edits, args.seed));
    let mut combat = args.battle.then(|| Combat::new(args.seed, 16.0));
    let frames = run(&mut app, &args, &mut edits, &mut trips, &mut combat);
    if let Some(c) = &combat {
        println!(
            "battle armies={ARMIES} units={units} engaged={} fallen={} most_in_range={} (units within 5 tiles of an enemy hold their position, then fall with odds of 1 in 240 a frame)",
            c.engaged, c.fallen, c.most_in_range
        );
    }
    let rss = common::resident_bytes();
    let cells = (args.size as f64).powi(2);
    println!(
        "memory rss_mb={:.1} map_bytes_per_cell={:.1} bytes_per_unit={:.0} (map: from before its spawn until its region map was ready; units: from then to the end)",
        rss as f64 / 1e6,
        rss_loaded.saturating_sub(rss_before) as f64 / cells,
        rss.saturating_sub(rss_loaded) as f64 / units.max(1) as f64,
    );
    report(&mut app, &args, &frames, edits.as_ref());
    if let Some(t) = &trips {
        t.report(&grid_copy, args.units, UNIT_SPEED);
    }
}

/// Units anywhere, each to a goal anywhere: (start, request) per unit.
fn random_orders(grid: &NavGrid, rng: &mut Rng, args: &Args) -> Vec<(Cell, PathRequest)> {
    let walkable: Vec<Cell> = grid.cells().filter(|&c| grid.is_walkable(c)).collect();
    (0..args.units)
        .map(|_| {
            let start = walkable[rng.below(walkable.len() as u32) as usize];
            let goal = walkable[rng.below(walkable.len() as u32) as usize];
            // `--standing`: an order to the cell it stands on (it arrives at once).
            let goal = if args.standing { start } else { goal };
            let request = PathRequest::to_cell(goal).with_policy(GoalPolicy::NearestReachable);
            (start, request)
        })
        .collect()
}

/// `--group`: every unit in one cluster near the left edge, one group order to a cell near the
/// right edge (through [`group_order`], as a game would give it).
fn group_orders(map: &NavMap, args: &Args) -> (Vec<(Cell, PathRequest)>, GroupTrip) {
    let grid = map.grid();
    let (s, mid) = (args.size as i32, args.size as i32 / 2);
    let island = battle::largest_island(grid);
    let home = group_center(grid, Cell::new(s / 16, mid), island).expect("a main island");
    let starts = spread_slots(grid, home, args.units as usize);
    let target = map.cell_to_world(Cell::new(s - 1 - s / 16, mid));
    let units: Vec<(Entity, Vec2)> = starts
        .iter()
        .enumerate()
        .map(|(k, &c)| {
            (
                Entity::from_raw_u32(k as u32 + 1).expect("small index"),
                map.cell_to_world(c),
            )
        })
        .collect();
    let orders = starts
        .into_iter()
        .zip(group_order(map, target, &units))
        .map(|(start, (_, request))| (start, request))
        .collect();
    (
        orders,
        GroupTrip {
            home,
            target: Cell::new(s - 1 - s / 16, mid),
        },
    )
}

/// Where a `--group` crowd starts (its center) and goes.
#[derive(Clone, Copy, Debug)]
struct GroupTrip {
    home: Cell,
    target: Cell,
}

/// `--group --move --gates`: when each unit first got past the first wall right of the crowd
/// and first reached the goal area (within the radius of a disc holding the crowd, plus two
/// tiles, of the target). How fast units moved is the `move` line's (the gaps' capacity is only
/// as real as those speeds: a crowd that jumps through a gap passes faster than it walks).
struct CrowdTrips {
    trip: GroupTrip,
    wall_x: f32,
    area: f32,
    past_wall: HashMap<Entity, usize>,
    in_area: HashMap<Entity, usize>,
}

impl CrowdTrips {
    /// `start_x`: the right-most column a unit starts in.
    fn new(trip: GroupTrip, size: u32, units: u32, start_x: i32) -> Option<CrowdTrips> {
        Some(CrowdTrips {
            trip,
            wall_x: gate_columns(size).find(|&x| x > start_x)? as f32 + 1.0,
            area: (units as f32 / std::f32::consts::PI).sqrt() + 2.0,
            past_wall: HashMap::new(),
            in_area: HashMap::new(),
        })
    }

    /// Where the crowd started (its center).
    fn home(&self) -> Cell {
        self.trip.home
    }

    fn frame(&mut self, app: &mut App, frame: usize) {
        let target = self.trip.target.as_vec2() + 0.5;
        let mut q = app.world_mut().query::<(Entity, &Transform, &Mover)>();
        for (e, tf, _) in q.iter(app.world()) {
            let p = tf.translation.truncate() / 16.0;
            if p.x >= self.wall_x {
                self.past_wall.entry(e).or_insert(frame);
            }
            if p.distance(target) <= self.area {
                self.in_area.entry(e).or_insert(frame);
            }
        }
    }

    /// The `crowd` line: the median unit's time to the goal area, a lone unit's (its smoothed
    /// path's length at the crowd's speed), the gap's capacity (units through the wall's two
    /// gaps per second, over the middle 60 % of the crowd) and the crowd's target time: 1.5 x
    /// the lone time plus the crowd's time through the gaps at that capacity.
    fn report(&self, grid: &NavGrid, units: u32, speed: f32) {
        let seconds = |f: usize| f as f64 / 60.0;
        let lone = bevy_tilepath::core::find_path(
            grid,
            self.trip.home,
            self.trip.target,
            &Default::default(),
        )
        .map(|p| {
            let points = bevy_tilepath::core::smooth_path(grid, &p.cells, 0.3);
            bevy_tilepath::core::polyline_length(&points) / speed as f64
        })
        .unwrap_or(f64::NAN);
        let mut crossed: Vec<usize> = self.past_wall.values().copied().collect();
        crossed.sort_unstable();
        let (a, b) = (units as usize / 5, units as usize * 4 / 5);
        let rate = match (crossed.get(a), crossed.get(b)) {
            (Some(&fa), Some(&fb)) if fb > fa => (b - a) as f64 / seconds(fb - fa),
            _ => f64::NAN,
        };
        let mut reached: Vec<usize> = self.in_area.values().copied().collect();
        reached.sort_unstable();
        let median = reached
            .get(units as usize / 2)
            .map_or(f64::NAN, |&f| seconds(f));
        let target = 1.5 * lone + units as f64 / rate;
        println!(
            "crowd wall_x={} reached_area={} median_to_area_s={median:.1} lone_s={lone:.1} gap_units_per_s={rate:.1} gap_capacity_s={:.1} target_s={target:.1} within_target={}",
            self.wall_x - 1.0,
            reached.len(),
            units as f64 / rate,
            if median <= target { "yes" } else { "no" },
        );
    }
}

/// The app: the plugins with the run's settings, outcome tally and movement timer.
fn build_app(args: &Args) -> App {
    let settings = TilepathSettings {
        time_budget: Duration::from_micros(args.budget_us),
        expansion_budget: u32::MAX,
        searches_per_frame: args.searches_per_frame.unwrap_or(if args.workers == 0 {
            8
        } else {
            64
        }),
        share_searches: args.share,
        lanes: !args.no_lanes,
        hierarchical_beyond: if args.flat { 0 } else { 64 },
        search: SearchConfig {
            jump_points: !args.no_jumps,
            ..Default::default()
        },
        jump_tables: !args.no_jump_tables,
        smooth_before_delivery: args.smooth_first,
        workers: if args.workers == 0 {
            WorkerMode::Inline
        } else {
            WorkerMode::Async {
                max_in_flight: args.workers,
            }
        },
        crowd: bevy_tilepath::CrowdSettings {
            avoidance: args.avoidance,
            pushing: args.pushing,
            ..Default::default()
        },
        lockstep: args.lockstep.then(|| {
            let default = bevy_tilepath::Lockstep::default();
            bevy_tilepath::Lockstep {
                worker_budget: args
                    .worker_budget_us
                    .map_or(default.worker_budget, Duration::from_micros),
                ..default
            }
        }),
        ..Default::default()
    };
    let period = Duration::from_secs_f64(1.0 / 60.0);
    // Lockstep: a tick of the fixed timestep every frame.
    let schedule = if args.lockstep {
        bevy_tilepath::TilepathSchedule::new(FixedUpdate)
    } else {
        bevy_tilepath::TilepathSchedule::new(Update)
    };
    let mut app = App::new();
    app.add_plugins(common::minimal_plugins(args.threads))
        .insert_resource(TimeUpdateStrategy::ManualDuration(period))
        .insert_resource(Time::<Fixed>::from_duration(period))
        .insert_resource(settings)
        .add_plugins(TilepathPlugins { schedule })
        .init_resource::<Tally>()
        .add_observer(count_request)
        .init_resource::<MoveTimer>()
        .add_systems(
            schedule.0,
            (
                (tally, move_start)
                    .after(TilepathSystems::Receive)
                    .before(TilepathSystems::Move),
                move_end
                    .after(TilepathSystems::Move)
                    .before(TilepathSystems::Last),
            ),
        );
    app
}

/// `--edits K`: every K frames a short wall goes down across a route in use (a few cells ahead
/// of a walking unit, across its way, never on or beside a unit), and the wall from three edits
/// before comes down; every frame, units whose body overlaps a blocked cell are counted.
struct Edits {
    every: usize,
    rng: Rng,
    walls: VecDeque<Vec<Cell>>,
    made: u32,
    overlaps: u64,
}

impl Edits {
    fn new(every: usize, seed: u64) -> Self {
        Edits {
            every,
            rng: Rng::new(seed ^ 0xED17),
            walls: VecDeque::new(),
            made: 0,
            overlaps: 0,
        }
    }

    fn frame(&mut self, app: &mut App, frame: usize) {
        let world = app.world_mut();
        let mut units = world.query::<(&Transform, &NavAgent, &NavPath, &PathProgress)>();
        let mut maps = world.query::<&mut NavMap>();
        let Ok(map) = maps.single(world) else {
            return;
        };
        let mut occupied = HashSet::new();
        let mut walkers = Vec::new();
        for (tf, agent, path, progress) in units.iter(world) {
            let pos = map.world_to_grid(tf.translation.truncate());
            if common::in_wall(map.grid(), pos, agent.radius) {
                self.overlaps += 1;
            }
            occupied.insert(cell_at(pos));
            if progress.state == MoveState::Moving && progress.cell_index + 8 < path.corridor.len()
            {
                walkers
                    .push(path.corridor[progress.cell_index + 5..progress.cell_index + 8].to_vec());
            }
        }
        if !frame.is_multiple_of(self.every) || walkers.is_empty() {
            return;
        }
        let ahead = &walkers[self.rng.below(walkers.len() as u32) as usize];
        let (c, d) = (ahead[1], ahead[2] - ahead[0]);
        let across = Cell::new(-d.y.signum(), d.x.signum());
        let near_unit = |w: Cell| {
            (-1..=1).any(|dy| (-1..=1).any(|dx| occupied.contains(&(w + Cell::new(dx, dy)))))
        };
        let wall: Vec<Cell> = (-3..=3)
            .map(|k| c + across * k)
            .filter(|&w| map.grid().is_walkable(w) && !near_unit(w))
            .collect();
        let mut map = maps.single_mut(world).expect("one map");
        for &w in &wall {
            map.set_walkable(w, false).expect("in bounds");
        }
        self.walls.push_back(wall);
        self.made += 1;
        if self.walls.len() > 3 {
            for w in self.walls.pop_front().expect("non-empty") {
                map.set_walkable(w, true).expect("in bounds");
            }
        }
    }
}

/// Per-frame figures of a run.
struct Frames {
    /// Wall time of the plugin's queue systems per frame.
    wall_ms: Vec<f64>,
    /// Their phases (collect, service, receive).
    phases: Vec<[Duration; 3]>,
    /// Their thread CPU time.
    cpu_ms: Vec<f64>,
    /// Of their wall time, the time spent waiting for late worker results (lockstep mode).
    wait_ms: Vec<f64>,
    /// Their work counted at the plugin's nominal costs (the budget's clock in lockstep mode).
    counted_ms: Vec<f64>,
    /// The calibration spin per frame (with `--calibrate`), thread CPU time.
    spin_ms: Vec<f64>,
    /// The calibration chase per frame (with `--calibrate`), thread CPU time.
    chase_ms: Vec<f64>,
    /// With `--calibrate`: the spin's iterations and the chase's steps sized to the budget at
    /// the run's start (more on a faster machine: runs of other days compare by them).
    calibration_work: [u64; 2],
    /// Wall time of each whole frame (`App::update`: every system, the plugin's and the
    /// runner's).
    update_ms: Vec<f64>,
    /// Frames until every request had its outcome.
    to_drain: usize,
    /// With `--move`: overlapping bodies and units walking through others, summed.
    crowd: CrowdFrame,
}

/// `--cross`: frames after the orders at which some units are ordered back across the stream
/// (the crowd is at the first wall's gaps by then).
const CROSS_AT: usize = 900;
/// `--cross`: one unit in this many is ordered back.
const CROSS_EVERY: usize = 10;

/// `--cross`: every [`CROSS_EVERY`]th unit (by entity) goes back to `home`, against the stream.
fn order_back(app: &mut App, home: Cell) {
    let world = app.world_mut();
    let mut units: Vec<Entity> = world
        .query_filtered::<Entity, With<Mover>>()
        .iter(world)
        .collect();
    units.sort_unstable();
    for e in units.into_iter().skip(CROSS_EVERY - 1).step_by(CROSS_EVERY) {
        world.entity_mut(e).insert(PathRequest::to_cell(home));
    }
}

/// 60 Hz frames until every request has its outcome (and, with `--move`, `--move-frames` more).
fn run(
    app: &mut App,
    args: &Args,
    edits: &mut Option<Edits>,
    trips: &mut Option<CrowdTrips>,
    combat: &mut Option<Combat>,
) -> Frames {
    let frame_period = Duration::from_secs_f64(1.0 / 60.0);
    let mut f = Frames {
        wall_ms: Vec::new(),
        phases: Vec::new(),
        cpu_ms: Vec::new(),
        wait_ms: Vec::new(),
        counted_ms: Vec::new(),
        spin_ms: Vec::new(),
        chase_ms: Vec::new(),
        update_ms: Vec::new(),
        to_drain: 0,
        crowd: CrowdFrame::default(),
        calibration_work: [0; 2],
    };
    let mut watch = CrowdWatch::default();
    let calibration = args
        .calibrate
        .then(|| Calibration::for_budget(Duration::from_micros(args.budget_us)));
    if let Some(c) = &calibration {
        f.calibration_work = [c.spins, c.steps];
    }
    let max_frames = args.max_frames;
    let mut frame = 0;
    // The service's work since the last `queue` line (with `--verbose`).
    let mut recent = ServiceWork::default();
    loop {
        let t = Instant::now();
        app.update();
        f.update_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        frame += 1;
        if let Some(edits) = edits.as_mut() {
            edits.frame(app, frame);
        }
        // The battle goes on for the moving frames; then every unit stops (a ceasefire) and
        // the runner waits for the last outcomes.
        if let Some(c) = combat.as_mut() {
            let end = f.to_drain + args.move_frames as usize;
            if f.to_drain == 0 || frame < end {
                c.frame(app.world_mut());
            } else if frame == end {
                let waiting = c.ceasefire(app.world_mut());
                println!("ceasefire frame={frame} {}", by_origin(&waiting));
            }
            if args.verbose && frame.is_multiple_of(100) {
                let waiting = battle::waiting(app.world_mut());
                let work = std::mem::take(&mut recent);
                let at = if f.to_drain == 0 || frame < end {
                    "battle"
                } else {
                    "ceasefire"
                };
                println!(
                    "queue frame={frame} during={at} {} {work}",
                    by_origin(&waiting)
                );
            }
        }
        if args.moving {
            f.crowd += watch.frame(app.world_mut());
        }
        if let Some(t) = trips.as_mut() {
            t.frame(app, frame);
            if args.cross && frame == CROSS_AT {
                order_back(app, t.home());
            }
        }
        let stats = app.world().resource::<TilepathFrameStats>();
        recent.add(stats);
        f.wall_ms.push(stats.main_thread.as_secs_f64() * 1000.0);
        f.phases.push(stats.phases);
        f.cpu_ms.push(stats.main_thread_cpu.as_secs_f64() * 1000.0);
        f.wait_ms.push(stats.worker_wait.as_secs_f64() * 1000.0);
        f.counted_ms.push(stats.counted.as_secs_f64() * 1000.0);
        if let Some(c) = &calibration {
            f.spin_ms.push(cpu_ms_of(|| {
                spin(c.spins);
            }));
            f.chase_ms.push(cpu_ms_of(|| c.chase.run(c.steps)));
        }
        let drained = app.world().resource::<PendingRequests>().is_empty();
        if drained && f.to_drain == 0 {
            f.to_drain = frame;
        }
        let moved_enough = !args.moving || frame >= f.to_drain + args.move_frames as usize;
        if drained && moved_enough || frame >= max_frames {
            break;
        }
        // 60 Hz: the workers get the rest of each frame, as in a game.
        if let Some(rest) = frame_period.checked_sub(t.elapsed()) {
            std::thread::sleep(rest);
        }
    }
    f
}

/// What the queue's service did over some frames (from [`TilepathFrameStats`]).
#[derive(Default)]
struct ServiceWork {
    frames: u32,
    started: u64,
    finished: u64,
    expansions: u64,
    counted_ms: f64,
    max_counted_ms: f64,
    searching: usize,
    phases_ms: [f64; 3],
    refining: usize,
}

impl ServiceWork {
    fn add(&mut self, stats: &TilepathFrameStats) {
        let counted = stats.counted.as_secs_f64() * 1000.0;
        self.frames += 1;
        self.started += u64::from(stats.started);
        self.finished += u64::from(stats.finished);
        self.expansions += stats.expansions;
        self.counted_ms += counted;
        self.max_counted_ms = self.max_counted_ms.max(counted);
        self.searching = stats.searching;
        for (sum, phase) in self.phases_ms.iter_mut().zip(stats.phases) {
            *sum += phase.as_secs_f64() * 1000.0;
        }
        self.refining = stats.refining;
    }
}

impl std::fmt::Display for ServiceWork {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let n = f64::from(self.frames.max(1));
        write!(
            f,
            "over_frames={} started={} finished={} expansions_per_frame={:.0} counted_ms_mean={:.3} counted_ms_max={:.3} searching={} phases_ms_mean={:.3}/{:.3}/{:.3} refining={}",
            self.frames,
            self.started,
            self.finished,
            self.expansions as f64 / n,
            self.counted_ms / n,
            self.max_counted_ms,
            self.searching,
            self.phases_ms[0] / n,
            self.phases_ms[1] / n,
            self.phases_ms[2] / n,
            self.refining,
        )
    }
}

/// The `move`, `cpu`, `calibration` and `summary` lines.
fn report(app: &mut App, args: &Args, f: &Frames, edits: Option<&Edits>) {
    if let Some(e) = edits {
        println!(
            "edits walls={} wall_overlaps={} (unit-frames with a body over a blocked cell)",
            e.made, e.overlaps
        );
    }
    if args.moving {
        let mt = app.world().resource::<MoveTimer>().frames.clone();
        let mut q = app.world_mut().query::<&bevy_tilepath::PathProgress>();
        let arrived = q
            .iter(app.world())
            .filter(|p| p.state == bevy_tilepath::MoveState::Arrived)
            .count();
        let phases = &app.world().resource::<MoveTimer>().phases;
        // The movement systems' thread CPU time: their wall time less preemption (the search
        // workers share the cores).
        let cpu: Vec<f64> = phases
            .iter()
            .map(|p| p.cpu.as_secs_f64() * 1000.0)
            .collect();
        println!(
            "move units={} frames={} mean_move_ms={:.3} p99_move_ms={:.3} max_move_ms={:.3} mean_move_cpu_ms={:.3} p99_move_cpu_ms={:.3} arrived={arrived} {}",
            args.units,
            mt.len(),
            mt.iter().sum::<f64>() / mt.len().max(1) as f64,
            percentile(&mt, 0.99),
            max(&mt),
            cpu.iter().sum::<f64>() / cpu.len().max(1) as f64,
            percentile(&cpu, 0.99),
            f.crowd,
        );
        println!("{}", phases_line(phases));
    }
    let tally = app.world().resource::<Tally>();
    let outcomes: u32 = tally.per_ticket.values().sum();
    let duplicates = tally.per_ticket.values().filter(|&&n| n != 1).count();
    // Frames until drained only: later frames have no pathfinding work (every frame if the
    // queue never drained: those all had).
    let until = if f.to_drain == 0 {
        f.wall_ms.len()
    } else {
        f.to_drain
    };
    let drain = &f.wall_ms[..until.min(f.wall_ms.len())];
    if args.verbose {
        for (i, w) in f.wait_ms.iter().enumerate().filter(|(_, w)| **w > 0.0) {
            eprintln!("frame {}: waited {w:.3} ms for workers", i + 1);
        }
        let budget_ms = args.budget_us as f64 / 1000.0;
        for (i, &cpu) in f.cpu_ms.iter().enumerate().filter(|(_, c)| **c > budget_ms) {
            eprintln!(
                "frame {}: cpu {cpu:.3} ms, counted {:.3} ms (collect, service, receive: {:?})",
                i + 1,
                f.counted_ms[i],
                f.phases[i]
            );
        }
        let ratios: Vec<f64> = f
            .cpu_ms
            .iter()
            .zip(&f.counted_ms)
            .take(drain.len())
            .filter(|(_, c)| **c > 1.0)
            .map(|(cpu, c)| cpu / c)
            .collect();
        eprintln!(
            "cpu over counted (frames counting over 1 ms: {}): p10 {:.2} p50 {:.2} p90 {:.2} p99 {:.2}",
            ratios.len(),
            percentile(&ratios, 0.1),
            percentile(&ratios, 0.5),
            percentile(&ratios, 0.9),
            percentile(&ratios, 0.99),
        );
        let (worst, ms) = drain
            .iter()
            .enumerate()
            .fold((0, 0.0), |b, (i, &m)| if m > b.1 { (i, m) } else { b });
        eprintln!(
            "worst frame {worst}: {ms:.3} ms (collect, service, receive: {:?})",
            f.phases[worst]
        );
    }
    let cpu = &f.cpu_ms[..drain.len()];
    let wait = &f.wait_ms[..drain.len()];
    println!(
        "cpu max_frame_cpu_ms={:.3} p99_frame_cpu_ms={:.3} (thread CPU time of the same systems: wall time minus preemption) worker_wait_frames={} max_worker_wait_ms={:.3}",
        max(cpu),
        percentile(cpu, 0.99),
        wait.iter().filter(|&&w| w > 0.0).count(),
        max(wait),
    );
    // The whole frame, first second apart: a map's first frames build its tables.
    let (first, rest) = f.update_ms.split_at(f.update_ms.len().min(60));
    println!(
        "frames max_first_second_ms={:.3} max_after_ms={:.3} p99_after_ms={:.3} (wall time of whole frames: every system, the runner's too)",
        max(first),
        max(rest),
        percentile(rest, 0.99),
    );
    let budget_ms = args.budget_us as f64 / 1000.0;
    if args.calibrate {
        let work = f.calibration_work;
        for (name, c, work) in [
            ("spin", &f.spin_ms, work[0]),
            ("chase", &f.chase_ms, work[1]),
        ] {
            let c = &c[..drain.len()];
            let median = percentile(c, 0.5);
            println!(
                "calibration {name} work={work} frames={} median_ms={median:.3} p99_ms={:.3} max_ms={:.3} over_median_10pct={} (plugin: over_budget_10pct={})",
                c.len(),
                percentile(c, 0.99),
                max(c),
                c.iter().filter(|&&m| m > median * 1.1).count(),
                drain.iter().filter(|&&m| m > budget_ms * 1.1).count(),
            );
        }
    }
    // With --move, units also repath on their own: every request (ticket) still has one outcome.
    let requests = tally.per_ticket.len() as u32;
    println!(
        "summary requests={requests} outcomes={outcomes} found={} shared={} hierarchical={} jump_points={} failed={} cancelled={} frames_to_first={} frames_to_drain={} max_frame_ms={:.3} p99_frame_ms={:.3} budget_ms={:.3} user_requests={} user_outcomes={}",
        tally.found,
        tally.shared,
        tally.hierarchical,
        tally.jump_points,
        tally.failed,
        tally.cancelled,
        tally.first_found.unwrap_or(0),
        f.to_drain,
        max(drain),
        percentile(drain, 0.99),
        budget_ms,
        tally.user_requests,
        tally.user_outcomes,
    );
    // Every request ends in exactly one outcome: a request lost (never answered) keeps the
    // queue from draining, and one of the runner's own would also be missing from its outcomes.
    let mut failures = Vec::new();
    if duplicates > 0 {
        failures.push(format!("{duplicates} requests had more than one outcome"));
    }
    let pending = app.world().resource::<PendingRequests>().len();
    if pending > 0 {
        failures.push(format!(
            "{pending} requests without an outcome after {} frames (--max-frames)",
            args.max_frames
        ));
    }
    if tally.user_outcomes != tally.user_requests {
        failures.push(format!(
            "the runner made {} requests and they had {} outcomes",
            tally.user_requests, tally.user_outcomes
        ));
    }
    if !failures.is_empty() {
        for failure in &failures {
            eprintln!("error: {failure}");
        }
        std::process::exit(1);
    }
}

/// `waiting=N by_origin O=n ...` of requests waiting by who asked.
fn by_origin(waiting: &[(String, usize)]) -> String {
    let by: Vec<String> = waiting.iter().map(|(o, n)| format!("{o}={n}")).collect();
    format!(
        "waiting={} by_origin {}",
        waiting.iter().map(|(_, n)| n).sum::<usize>(),
        by.join(" ")
    )
}
