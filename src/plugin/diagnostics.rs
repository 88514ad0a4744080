//! What the plugin's main-thread work cost: [`TilepathFrameStats`] (the last frame's figures),
//! the phase timer that fills them, and the Bevy diagnostics published from them.

use std::ops::{Deref, DerefMut};
use std::time::{Duration, Instant};

use bevy::diagnostic::{Diagnostic, DiagnosticPath, Diagnostics, RegisterDiagnostic};
use bevy::prelude::*;

use crate::core::{Cell, NavGrid};

use super::cpu_clock::CpuClock;
use super::movement::MovementFrameStats;
use super::schedule::{TilepathSchedule, TilepathSystems};

/// The last complete frame's figures of the plugin's main-thread work (read them for your own
/// HUD; [`TilepathDiagnosticsPlugin`] also publishes them as Bevy diagnostics).
#[derive(Resource, Clone, Debug, Default, Reflect)]
#[reflect(Resource)]
pub struct TilepathFrameStats {
    /// Wall time spent in the plugin's queue systems (collect, service, receive).
    pub main_thread: Duration,
    /// CPU time those systems used (wall time minus the time their threads were preempted;
    /// equal to wall time where thread CPU clocks are unavailable).
    pub main_thread_cpu: Duration,
    /// Wall time in each phase: collect, service, receive.
    pub phases: [Duration; 3],
    /// Searches started.
    pub started: u32,
    /// Outcomes delivered.
    pub finished: u32,
    /// Of those, paths read off a shared search.
    pub shared: u32,
    /// Mean latency in frames of the outcomes delivered.
    pub latency_frames: f64,
    /// Node expansions done on the main thread.
    pub expansions: u64,
    /// Requests waiting to start at the end of the frame (made, validated or not).
    pub queue_len: usize,
    /// Searches running at the end of the frame (inline or on workers).
    pub searching: usize,
    /// Found paths being smoothed inline at the end of the frame.
    pub smoothing: usize,
    /// Region maps (for hierarchical search; see
    /// [`TilepathSettings::hierarchical_beyond`](crate::TilepathSettings::hierarchical_beyond))
    /// being built in the background at the end of the frame: a map's first, or a new one after
    /// an edit the map's cells do not record. Outside lockstep mode a region map is used from
    /// the frame it is done, so which searches go through it depends on how fast the machine
    /// built it; a run that must repeat exactly on one machine waits for this to be 0 before
    /// its first requests (the RTS demo's headless runs do).
    pub region_maps_building: usize,
    /// Rests of delivered paths waiting to be smoothed inline when the frame's service began
    /// (see
    /// [`TilepathSettings::smooth_before_delivery`](crate::TilepathSettings::smooth_before_delivery)),
    /// those no unit will walk left out: at most one per unit with a path.
    pub refining: usize,
    /// Frames since the oldest of those rests was delivered (0: none waits).
    pub oldest_rest_frames: u32,
    /// Rests smoothed to their path's goal this frame: for each, frames since its path was
    /// delivered (with [`TilepathFrameStats::abandoned_rests`], how promptly smoothing keeps
    /// up).
    pub smoothed_rests: Vec<u32>,
    /// Rests that left this frame before they were smoothed to the goal (their path replaced or
    /// cancelled, their unit gone or arrived, or walked past them): for each, frames since its
    /// path was delivered.
    pub abandoned_rests: Vec<u32>,
    /// Units walking the raw cell centers of a rest not smoothed yet, when the frame's service
    /// began (summed over frames: unit-frames of unsmoothed walking).
    pub walking_raw: usize,
    /// Frames the oldest request without an outcome has waited (0: none waits): with
    /// [`TilepathFrameStats::queue_len`], how far the queue is behind. A warning is logged when
    /// requests come faster than they are served for a sustained stretch.
    pub oldest_wait_frames: u32,
    /// The frame's work counted at nominal costs (the budget's clock in lockstep mode, where
    /// the frame stops starting work once it reaches
    /// [`TilepathSettings::time_budget`](crate::TilepathSettings::time_budget)); counted in
    /// every mode, to compare with [`TilepathFrameStats::main_thread_cpu`].
    pub counted: Duration,
    /// Wall time the frame waited for worker searches whose results were due and not done yet
    /// (lockstep mode only; always zero outside it). Often above zero: the workers finish less
    /// in a tick on this machine than [`Lockstep::worker_budget`](crate::Lockstep::worker_budget)
    /// counts on: lower it (or raise
    /// [`Lockstep::worker_ticks`](crate::Lockstep::worker_ticks)).
    pub worker_wait: Duration,
    /// Cells expanded by the most recent inline searches with their maps, at most eight (debug
    /// overlay; kept
    /// only with [`TilepathSettings::record_expanded`](crate::TilepathSettings::record_expanded)).
    pub recent_expanded: Vec<(Entity, Vec<Cell>)>,
}

/// The phases of the plugin's main-thread work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    Collect = 0,
    Service = 1,
    Receive = 2,
}

/// This frame's figures so far (rolled into [`TilepathFrameStats`] at the end of the frame).
#[derive(Resource, Clone, Debug, Default)]
pub(crate) struct FrameTally {
    pub(crate) main_thread: Duration,
    pub(crate) main_thread_cpu: Duration,
    pub(crate) phases: [Duration; 3],
    pub(crate) started: u32,
    pub(crate) finished: u32,
    pub(crate) shared: u32,
    pub(crate) latency_sum: u64,
    pub(crate) expansions: u64,
    /// Counted work this frame, in nanoseconds at the nominal costs of [`Cost`]: the budget's
    /// clock in lockstep mode.
    pub(crate) work: u64,
    /// The budget's clock spent this frame by the phases done: wall time, or counted work in
    /// lockstep mode.
    pub(crate) spent: Duration,
    /// The receive phase's share of `spent`, this frame and the last (kept across frames).
    pub(crate) receive_spent: Duration,
    pub(crate) last_receive_spent: Duration,
    /// Wall time spent waiting for late worker reports (lockstep mode).
    pub(crate) worker_wait: Duration,
}

impl FrameTally {
    /// This frame's figures as a snapshot, and a fresh tally.
    fn roll_into(&mut self, stats: &mut TilepathFrameStats) {
        let t = std::mem::take(self);
        self.last_receive_spent = t.receive_spent;
        stats.main_thread = t.main_thread;
        stats.main_thread_cpu = t.main_thread_cpu;
        stats.phases = t.phases;
        stats.started = t.started;
        stats.finished = t.finished;
        stats.shared = t.shared;
        stats.latency_frames = if t.finished > 0 {
            t.latency_sum as f64 / t.finished as f64
        } else {
            0.0
        };
        stats.expansions = t.expansions;
        stats.worker_wait = t.worker_wait;
        stats.counted = Duration::from_nanos(t.work);
    }

    /// Counts `cost` of work done on `grid`: work that reads the grid's arrays (searches,
    /// line checks) costs more on bigger grids ([`doublings`]).
    pub(crate) fn charge_on(&mut self, grid: &NavGrid, cost: Cost) {
        self.charge_at(doublings(grid), cost);
    }

    /// Counts `cost` of work done (the budget's clock in lockstep mode).
    pub(crate) fn charge(&mut self, cost: Cost) {
        self.charge_at(0, cost);
    }

    /// Counts `cost` of work done on a grid of [`doublings`] `d`.
    fn charge_at(&mut self, d: u64, cost: Cost) {
        self.work += cost.nanos(d);
    }
}

/// Counted work: what each unit of the plugin's main-thread work costs on the budget's clock in
/// lockstep mode ([`TilepathSettings::lockstep`](crate::TilepathSettings::lockstep)), in
/// nanoseconds. Nominal costs, measured on a 2-core x86-64 machine (see BENCHMARKS.md,
/// "How the defaults were chosen: lockstep"), so that [`TilepathSettings::time_budget`](crate::TilepathSettings::time_budget)
/// buys about as much work counted as it does timed there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cost {
    /// `n` heap pops of a search.
    Expansions(u64),
    /// `n` nodes expanded by a jump point search reading a jump table. The cells it scans
    /// instead near an overlay (`AStar::scan_expansions`, one expansion per 16) are charged as
    /// A*'s [`Cost::Expansions`], and so is every expansion of a search without a table.
    Jumps(u64),
    /// `n` heap pops of the searches of a region map's legs (dearer than a flat search's: each
    /// leg begins a search and its path is spliced onto the others).
    Legs(u64),
    /// `n` heap pops of a shared search's tree (dearer: each settles a node of a whole-map
    /// tree).
    Tree(u64),
    /// `n` heap pops of a route through a region map (its searches of two clusters and of the
    /// region graph: dearer pops).
    Route(u64),
    /// One step of smoothing (a line check or two)...
    LineCheck,
    /// ... and the `n` cells it looked at.
    Cells(u64),
    /// Starting a search: its claims overlay, and a grid snapshot for a worker.
    Start,
    /// Validating a request.
    Validate,
    /// Judging a result and delivering its outcome, a path of `n` cells (its waypoints and
    /// corridor built, the rest queued for smoothing: dearer the longer it is).
    Deliver(u64),
    /// Taking a worker's report back.
    Report,
    /// A shared search's path for one member, of `n` cells: read off its tree, or joined to its
    /// lane (measured: 15 us a member of a 600-unit group order on 512 x 512, a tenth of it its
    /// last tiles' own search, charged apart).
    Member(u64),
    /// Planning the lanes of a group order's `n` members (183 us for 600).
    Lanes(u64),
    /// Delivering an outcome with a path of `n` cells (its components and messages, its rest
    /// queued for smoothing).
    Outcome(u64),
    /// `n` cells of the claims overlays of searches started.
    Overlay(u64),
    /// A pass over the `n` requests without an outcome (their oldest's wait, for the frame's
    /// statistics).
    Pending(u64),
    /// `n` cells of a found path walked or copied (read off a shared tree; the raw rest added
    /// after the smoothed start).
    PathCells(u64),
    /// Picking the frame's next starts from `n` waiting requests (measured 2026-12: 24-51 ns a
    /// request, median 31, picking 8 of 6,500 in the 16,000-unit battle).
    Pick(u64),
    /// The rests' triage: `rests` gone through, `reads` of a unit's place and path.
    Triage { rests: u64, reads: u64 },
    /// Any other step of a budgeted loop (so every loop ends within its budget).
    Step,
}

impl Cost {
    /// The nominal time of work that reads no grid (see [`Cost::nanos`]).
    pub(crate) fn nominal(self) -> Duration {
        Duration::from_nanos(self.nanos(0))
    }

    /// The work of `expansions` heap pops of a grid search, `scans` of them the cells a jump
    /// point search scanned (`AStar::scan_expansions`): with a jump table, the nodes it read
    /// off the table cost [`Cost::Jumps`] and the cells it scanned near an overlay A*'s rate;
    /// without one, every pop costs A*'s.
    pub(crate) fn of_search(jump_table: bool, expansions: u64, scans: u64) -> [Cost; 2] {
        if jump_table {
            let scans = scans.min(expansions);
            [Cost::Jumps(expansions - scans), Cost::Expansions(scans)]
        } else {
            [Cost::Expansions(expansions), Cost::Expansions(0)]
        }
    }

    /// Nominal nanoseconds of this work on `grid` (counted where no [`FrameTally`] is at hand:
    /// a worker search counts its own work).
    pub(crate) fn nanos_on(self, grid: &NavGrid) -> u64 {
        self.nanos(doublings(grid))
    }

    /// Nominal nanoseconds on a grid of [`doublings`] `d` (0 for work that does not read a
    /// grid): work that reads a grid's arrays costs more on bigger grids, as the arrays of
    /// nodes, jumps and trees outgrow the caches. Measured (BENCHMARKS.md, how the defaults
    /// were chosen: lockstep) with `perf` and thread CPU time, per unit of work on 256 x 256 and
    /// 512 x 512 maps: a node expanded by A* 160 and 210 ns, by a jump-table search 360 and
    /// 980, by a shared tree 180 and 300. A cell a line check looks at was refitted
    /// (the same section) from the ticks of
    /// six lockstep runs, each three times, once a check counted one look per cell of open ground
    /// (not its block of nine): 15 and 25 ns (7 and 30 before, with which a tick smoothing long
    /// lines on 256 x 256 took 2.6 times its budget at the 99th percentile).
    fn nanos(self, d: u64) -> u64 {
        match self {
            Cost::Expansions(n) => n * sized(160, 210, d),
            Cost::Jumps(n) => n * sized(360, 980, d),
            Cost::Legs(n) => n * sized(200, 270, d),
            Cost::Route(n) => n * sized(250, 320, d),
            Cost::Tree(n) => n * sized(180, 300, d),
            Cost::LineCheck => 300,
            Cost::Cells(n) => n * sized(15, 25, d),
            Cost::Start => 8_000,
            Cost::Validate => 500,
            Cost::Deliver(n) => 2_000 + n * 20,
            Cost::Report => 500,
            Cost::Outcome(n) => 1_000 + n * 6,
            Cost::Overlay(n) => n * 50,
            Cost::Pending(n) => n * 20,
            Cost::PathCells(n) => n * 15,
            Cost::Member(n) => 5_000 + n * 25,
            Cost::Lanes(n) => n * 300,
            Cost::Pick(n) => n * 40,
            Cost::Triage { rests, reads } => rests * 35 + reads * 600,
            Cost::Step => 4_000,
        }
    }
}

/// How many times `grid`'s cells double those of a 128 x 128 grid (0 at that size or below):
/// the size term of [`Cost`]'s nominal costs (see [`sized`]). An integer function of the
/// grid's size, so the same on every machine.
fn doublings(grid: &NavGrid) -> u64 {
    let cells = grid.width() as u64 * grid.height() as u64;
    (cells / (128 * 128)).max(1).ilog2() as u64
}

/// A nominal cost on a grid of [`doublings`] `d`: `small` on grids of 256 x 256 cells or
/// fewer, whose arrays of nodes, jumps and trees stay in a cache; `large` from 512 x 512 on,
/// whose arrays do not (half way between at 3 doublings).
fn sized(small: u64, large: u64, d: u64) -> u64 {
    match d {
        0..=2 => small,
        3 => (small + large) / 2,
        _ => large,
    }
}

/// Times one phase of a system: wall and thread CPU time from its creation to its drop are
/// added to the frame's tally. It derefs to the tally, so the system uses it as its tally.
/// Budgets read its clock ([`PhaseTimer::elapsed`]): wall time, or in lockstep mode the work
/// counted ([`Cost`]), which depends on nothing but the work.
pub(crate) struct PhaseTimer<'w> {
    tally: ResMut<'w, FrameTally>,
    phase: Phase,
    wall: Instant,
    cpu: CpuClock,
    /// Counted work at the start, in lockstep mode (`None`: the clock is wall time).
    counted_from: Option<u64>,
}

impl<'w> PhaseTimer<'w> {
    /// Starts timing `phase`; with `counted`, its budget clock is the work counted.
    pub(crate) fn start(tally: ResMut<'w, FrameTally>, phase: Phase, counted: bool) -> Self {
        let counted_from = counted.then_some(tally.work);
        PhaseTimer {
            tally,
            phase,
            wall: Instant::now(),
            cpu: CpuClock::now(),
            counted_from,
        }
    }

    /// The budget's clock since the phase started: wall time, or the work counted since in
    /// lockstep mode.
    pub(crate) fn elapsed(&self) -> Duration {
        match self.counted_from {
            Some(from) => Duration::from_nanos(self.tally.work - from),
            None => self.wall.elapsed(),
        }
    }

    /// The budget's clock spent this frame: by the phases done, and this one so far.
    pub(crate) fn spent(&self) -> Duration {
        self.tally.spent + self.elapsed()
    }
}

impl Deref for PhaseTimer<'_> {
    type Target = FrameTally;
    fn deref(&self) -> &FrameTally {
        &self.tally
    }
}

impl DerefMut for PhaseTimer<'_> {
    fn deref_mut(&mut self) -> &mut FrameTally {
        &mut self.tally
    }
}

impl Drop for PhaseTimer<'_> {
    fn drop(&mut self) {
        let spent = self.elapsed();
        let wall = self.wall.elapsed();
        let cpu = self.cpu.elapsed();
        let tally = &mut *self.tally;
        tally.spent += spent;
        if self.phase == Phase::Receive {
            tally.receive_spent += spent;
        }
        tally.main_thread_cpu += cpu;
        tally.phases[self.phase as usize] += wall;
        tally.main_thread += wall;
    }
}

/// A request waiting longer than this many frames means the queue is behind.
const OVERLOAD_WAIT: u32 = 60;

/// Frames the queue must stay behind (or, once warned, caught up) before the overload warning
/// is logged (or can be logged again).
const OVERLOAD_STRETCH: u32 = 300;

/// Whether the queue has been behind, for the overload warning.
#[derive(Default)]
pub(crate) struct OverloadWatch {
    /// Consecutive frames behind (or, after a warning, caught up).
    frames: u32,
    warned: bool,
}

impl OverloadWatch {
    /// One frame's figures; `true` the one frame the warning is due.
    fn frame(&mut self, stats: &TilepathFrameStats) -> bool {
        let behind = stats.oldest_wait_frames > OVERLOAD_WAIT;
        if behind != self.warned {
            self.frames += 1;
        } else {
            self.frames = 0;
        }
        if self.frames < OVERLOAD_STRETCH {
            return false;
        }
        self.frames = 0;
        self.warned = !self.warned;
        self.warned
    }
}

/// End of frame: this frame's tally becomes [`TilepathFrameStats`]; a queue that stayed behind
/// for [`OVERLOAD_STRETCH`] frames logs one warning (again only after it caught up for as long).
pub(crate) fn roll_frame(
    mut tally: ResMut<FrameTally>,
    mut stats: ResMut<TilepathFrameStats>,
    mut watch: Local<OverloadWatch>,
) {
    tally.roll_into(&mut stats);
    if watch.frame(&stats) {
        warn!(
            "bevy_tilepath: path requests arrive faster than they are served ({} waiting, the \
             oldest for {} frames, for {OVERLOAD_STRETCH} frames running); raise \
             TilepathSettings::time_budget or expansion_budget, search on workers \
             (TilepathSettings::workers), or lower hierarchical_beyond so long requests search \
             the region map",
            stats.queue_len, stats.oldest_wait_frames
        );
    }
}

/// The diagnostic paths the plugin publishes.
pub struct TilepathDiagnostics;

impl TilepathDiagnostics {
    /// Requests waiting to start.
    pub const QUEUE_LENGTH: DiagnosticPath = DiagnosticPath::const_new("tilepath/queue_length");
    /// Outcomes delivered per frame.
    pub const SEARCHES_FINISHED: DiagnosticPath =
        DiagnosticPath::const_new("tilepath/searches_finished");
    /// Main-thread milliseconds per frame in the plugin's systems.
    pub const MAIN_THREAD_MS: DiagnosticPath = DiagnosticPath::const_new("tilepath/main_thread_ms");
    /// Mean frames from request to outcome.
    pub const LATENCY_FRAMES: DiagnosticPath = DiagnosticPath::const_new("tilepath/latency_frames");
    /// Milliseconds per frame in the movement systems ([`MovementFrameStats::total`]; with
    /// [`MovementPlugin`](crate::MovementPlugin) only).
    pub const MOVEMENT_MS: DiagnosticPath = DiagnosticPath::const_new("tilepath/movement_ms");
}

/// Publishes [`TilepathFrameStats`] (and [`MovementFrameStats`]) as Bevy diagnostics ([`TilepathDiagnostics`]'s paths), for
/// `LogDiagnosticsPlugin` or your HUD's `DiagnosticsStore`.
#[derive(Default)]
pub struct TilepathDiagnosticsPlugin {
    /// The schedule of the plugin group.
    pub schedule: TilepathSchedule,
}

impl Plugin for TilepathDiagnosticsPlugin {
    fn build(&self, app: &mut App) {
        let schedule = self.schedule.configure(app);
        app.init_resource::<TilepathFrameStats>()
            .register_diagnostic(Diagnostic::new(TilepathDiagnostics::QUEUE_LENGTH))
            .register_diagnostic(Diagnostic::new(TilepathDiagnostics::SEARCHES_FINISHED))
            .register_diagnostic(
                Diagnostic::new(TilepathDiagnostics::MAIN_THREAD_MS).with_suffix(" ms"),
            )
            .register_diagnostic(Diagnostic::new(TilepathDiagnostics::LATENCY_FRAMES))
            .register_diagnostic(
                Diagnostic::new(TilepathDiagnostics::MOVEMENT_MS).with_suffix(" ms"),
            )
            .add_systems(schedule, publish.in_set(TilepathSystems::Last));
    }
}

fn publish(
    mut diagnostics: Diagnostics,
    stats: Res<TilepathFrameStats>,
    movement: Option<Res<MovementFrameStats>>,
) {
    if let Some(movement) = movement {
        diagnostics.add_measurement(&TilepathDiagnostics::MOVEMENT_MS, || {
            movement.total().as_secs_f64() * 1000.0
        });
    }
    diagnostics.add_measurement(&TilepathDiagnostics::QUEUE_LENGTH, || {
        stats.queue_len as f64
    });
    diagnostics.add_measurement(&TilepathDiagnostics::SEARCHES_FINISHED, || {
        stats.finished as f64
    });
    diagnostics.add_measurement(&TilepathDiagnostics::MAIN_THREAD_MS, || {
        stats.main_thread.as_secs_f64() * 1000.0
    });
    diagnostics.add_measurement(&TilepathDiagnostics::LATENCY_FRAMES, || {
        stats.latency_frames
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(watch: &mut OverloadWatch, oldest_wait: u32, n: u32) -> u32 {
        let stats = TilepathFrameStats {
            oldest_wait_frames: oldest_wait,
            ..Default::default()
        };
        (0..n).filter(|_| watch.frame(&stats)).count() as u32
    }

    #[test]
    fn overload_warns_once_per_sustained_stretch() {
        let mut watch = OverloadWatch::default();
        // Short spells behind do not warn.
        assert_eq!(
            frames(&mut watch, OVERLOAD_WAIT + 1, OVERLOAD_STRETCH - 1),
            0
        );
        assert_eq!(frames(&mut watch, 0, 1), 0);
        assert_eq!(
            frames(&mut watch, OVERLOAD_WAIT + 1, OVERLOAD_STRETCH - 1),
            0
        );
        // A sustained one warns once, however long it lasts.
        assert_eq!(
            frames(&mut watch, OVERLOAD_WAIT + 1, 10 * OVERLOAD_STRETCH),
            1
        );
        // Caught up briefly, behind again: no second warning.
        assert_eq!(frames(&mut watch, 0, OVERLOAD_STRETCH - 1), 0);
        assert_eq!(
            frames(&mut watch, OVERLOAD_WAIT + 1, 10 * OVERLOAD_STRETCH),
            0
        );
        // Caught up for a stretch, then behind for one: it warns again.
        assert_eq!(frames(&mut watch, 0, OVERLOAD_STRETCH), 0);
        assert_eq!(frames(&mut watch, OVERLOAD_WAIT + 1, OVERLOAD_STRETCH), 1);
    }
}
