//! The plugin group's settings resource: queue, search and crowd tuning.

use std::time::Duration;

use bevy::prelude::*;

use crate::core::SearchConfig;

/// Where searches run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Reflect)]
pub enum WorkerMode {
    /// On the main thread, resumable: each frame advances searches within the expansion and time
    /// budgets and continues unfinished ones next frame.
    Inline,
    /// On Bevy's `AsyncComputeTaskPool`, against an immutable snapshot of the grid; results come
    /// back over a channel drained every frame. Runners on the pool serve the searches handed to
    /// them one after the other, most urgent first (a few per runner at a time, so a more urgent
    /// request still gets its turn within a frame or two). A worker search yields its thread
    /// every 200 us, so on machines with few cores the frame's own threads never wait long for a
    /// core. The rests of found paths are smoothed on the main thread, as inline.
    Async {
        /// Searches running at once at most (one runner each); sixteen times as many may be
        /// handed off and waiting for a runner.
        max_in_flight: usize,
    },
}

/// Settings of the [`TilepathPlugins`](crate::TilepathPlugins). Added with `init_resource`, so
/// values you insert before adding the plugins win; change them at any time.
#[derive(Resource, Clone, Debug, Reflect)]
#[reflect(Resource)]
pub struct TilepathSettings {
    /// Searches started per frame at most (Lester: "never search for more than a few units at a
    /// time").
    pub searches_per_frame: usize,
    /// Inline mode: searches in progress at once (each holds scratch memory the size of the grid;
    /// the frame's budget goes round them in slices).
    pub max_inline_searches: usize,
    /// Node expansions per frame on the main thread (inline mode).
    pub expansion_budget: u32,
    /// Wall time per frame for the plugin's main-thread work (queue servicing and result
    /// handling); work left over continues next frame. In lockstep mode
    /// ([`TilepathSettings::lockstep`]) the work is counted instead of timed (heap pops, line
    /// checks, starts, deliveries at nominal costs measured on a 2-core x86-64 machine, dearer
    /// on grids of 512 x 512 and more), so the budget buys the same work on every machine; on
    /// a faster or slower one it takes less or more time.
    pub time_budget: Duration,
    /// Inline or on worker threads.
    pub workers: WorkerMode,
    /// Heuristic, weight and expansion limit of every search; the goal policy comes from each
    /// [`PathRequest`](crate::PathRequest).
    pub search: SearchConfig,
    /// Precompute jump distances (JPS+: [`NavGrid::build_jump_table`](crate::core::NavGrid::build_jump_table))
    /// for every map grid and class grid that jump point search runs on
    /// ([`SearchConfig::jump_points`] on an eight-way grid of one terrain without penalties), so
    /// the queue's jump point searches read where each jump ends instead of scanning: the same
    /// paths, found faster. A table costs 16 bytes a cell (4 MB on 512 x 512) and is built on
    /// a thread of its own when a grid comes to qualify (15-20 ms on 512 x 512; searches
    /// scan until it is given to the grid), then kept up to date by edits locally. Off:
    /// searches scan, and tables already built are dropped.
    pub jump_tables: bool,
    /// A waiting request gains one priority point per this many frames, so nothing starves.
    pub ageing_frames: u32,
    /// Smooth found paths (Pinter's post-process): on by default.
    pub smoothing: bool,
    /// How much of a found path is smoothed before it is delivered: its waypoints up to the
    /// first at or past this many cells (found looking ahead over the whole path, so the two
    /// parts join without a bend); inline, the rest is smoothed afterwards (taking turns with
    /// searches) and patched into the unit's [`NavPath`](crate::NavPath) beyond the waypoint it
    /// walks to. A worker smooths the rest itself before it sends the path, with the same
    /// forward pass as the first leg ([`Smoother::forward`](crate::core::Smoother::forward)),
    /// so worker paths come smoothed whole. `usize::MAX` smooths whole paths before delivery
    /// with the full smoother, inline and on workers (smoothing long paths then limits how fast
    /// a group's paths come).
    pub smooth_before_delivery: usize,
    /// Extra cost, in tiles, of stepping onto a cell claimed by another unit near the searcher
    /// (Lester's claimed nodes: groups spread out; claimed cells never become unwalkable).
    /// Follow orders' searches use [`TilepathSettings::follow_claim_penalty`] instead.
    pub claim_penalty: f32,
    /// What a cell claimed by another unit, or a stopped unit's cell, costs (tiles) in a follow
    /// order's searches ([`PathGoal::Entity`](crate::PathGoal::Entity): the game's request and
    /// the plugin's searches after the target, [`PathOrigin::Pursuit`](crate::PathOrigin)),
    /// instead of [`TilepathSettings::claim_penalty`] and a block. The claims and cells of the
    /// target's other followers, who move on with it, are left out altogether. At the
    /// full price a follower went round a whole wall for a gap a few of them claimed or one of
    /// them stood in, out of range for seconds. `army --scene pursuit` (200 followers of 20
    /// targets among walls), seeds 1-12: at 1 tile the followers are in range 95.8 % of the
    /// time (94.7 % at 3 tiles with stopped units priced, 93.6 % with them blocked), the worst
    /// follower 72.0-86.9 % of it (61.6-82.0 % blocked); at 0, two followers side by side kept
    /// each other out of a gate for 30 s.
    pub follow_claim_penalty: f32,
    /// Only claims of units within this many tiles (Chebyshev) of the searcher count (Lester:
    /// "only units near the searcher"). At most [`MAX_CLAIM_RADIUS`](crate::MAX_CLAIM_RADIUS):
    /// larger values are treated as that (and logged once), so one search never scans more than
    /// a 129 x 129 window of claims.
    pub claim_radius: f32,
    /// Keep the cells expanded by recent inline searches in
    /// [`TilepathFrameStats::recent_expanded`](crate::TilepathFrameStats) (debug overlay; costs a
    /// scan of the grid per search).
    pub record_expanded: bool,
    /// Cells of stopped units within [`TilepathSettings::claim_radius`] are treated as blocked
    /// (if that leaves no path, or none costing at most twice the straight distance plus 40
    /// tiles, the search runs again with them as a heavy penalty instead:
    /// [`TilepathSettings::stopped_unit_penalty`]; a goal walled in by standing units is given
    /// up near it, not after a search of the whole map); in a follow order's searches they cost
    /// [`TilepathSettings::follow_claim_penalty`].
    pub avoid_stopped_units: bool,
    /// Cost, in tiles, of a stopped unit's cell in the second attempt described at
    /// [`TilepathSettings::avoid_stopped_units`].
    pub stopped_unit_penalty: f32,
    /// Serve waiting requests to the same goal cell (or the same group target) with one shared
    /// backward search ([`GoalTree`](crate::core::GoalTree)); each unit's path costs exactly
    /// what its own search would under the shared search's overlay (see the queue docs), but
    /// for group members walking lanes ([`TilepathSettings::lanes`]), and near cells edited
    /// while the search ran (it keeps what it found and checks each path against the grid as
    /// it is: [`GoalTree::follow_edits`](crate::core::GoalTree::follow_edits)). Off:
    /// every unit searches alone. Requires a search without turn penalty or expansion limit.
    pub share_searches: bool,
    /// Members of a group order ([`group_order`](crate::group_order), [`GroupOrder`](crate::GroupOrder))
    /// walk side by side in lanes across the width their route has (a road three tiles wide
    /// carries three lanes, open ground the group's own width), merging where the route narrows
    /// and spreading after, instead of all following the one corridor of their shared search.
    /// Their paths are then not the shortest, only close to it (see the queue docs). Needs
    /// `share_searches`.
    pub lanes: bool,
    /// Shared searches kept after they finish, for later requests to the same goal while the
    /// grid is unchanged (each holds memory the size of the grid: 16 bytes a cell).
    pub tree_cache: usize,
    /// Priority added to the game's own requests, and to the short trips of units making way or
    /// stepping aside for them, over the plugin's repaths (after edits, around units in the
    /// way), so a player's order never waits behind a backlog of them; repaths still age past
    /// it in `user_priority * ageing_frames` frames. A unit stopped short of a wall dropped
    /// across its way ([`PathOrigin::Blocked`](crate::PathOrigin::Blocked)) gets twice this:
    /// its search goes ahead of orders.
    pub user_priority: i32,
    /// Requests to a goal at least this many tiles away (Chebyshev) search a region map first
    /// and refine its route leg by leg ([`HierarchicalSearch`](crate::core::HierarchicalSearch);
    /// Lester's two-tier search, Pinter's region map): they expand a fraction of the cells, and
    /// their paths are up to a few percent longer than the shortest (about 1 % on average on
    /// the MovingAI DAO maps). Only the game's requests and repaths after grid edits use it:
    /// requests to one goal that share a search, nearest-of goals, the plugin's repaths around
    /// units in the way (the region map's route does not know where units stand) and
    /// [`PathRequest::optimal`](crate::PathRequest::optimal) ones stay exact. `0` turns it off
    /// (and drops the region maps).
    pub hierarchical_beyond: u32,
    /// Side, in tiles, of the region map's square clusters (at least 4). Each map's region map
    /// is built on a thread of its own when the map appears (searches are flat until it is
    /// ready) and updated after edits in the clusters they touch.
    pub region_cluster: u32,
    /// How units in a crowd wait, make way, step aside and, as a last resort, walk through.
    pub crowd: CrowdSettings,
    /// Fog of war: units of a player plan on what their player has seen.
    pub fog: FogSettings,
    /// Deterministic lockstep: `Some` makes everything the plugin decides depend only on the
    /// tick and the inputs (see [`Lockstep`]); `None` (the default) budgets by wall time and
    /// takes worker results as soon as they come.
    pub lockstep: Option<Lockstep>,
}

impl TilepathSettings {
    /// The default settings in lockstep mode ([`Lockstep::default`]).
    pub fn lockstep() -> Self {
        TilepathSettings {
            lockstep: Some(Lockstep::default()),
            ..default()
        }
    }
}

/// Deterministic lockstep mode, for multiplayer games that simulate every client from the same
/// stream of orders, and for replays (run the plugin group in `FixedUpdate`:
/// [`TilepathPlugins::in_schedule`](crate::TilepathPlugins::in_schedule)). Given the same
/// inputs in the same ticks, every tick's paths, moves and outcomes are the same on every
/// machine and every run, whatever the load:
///
/// - budgets count work instead of timing it ([`TilepathSettings::time_budget`]);
/// - a worker search handed off at tick `t` is applied at tick `t + worker_ticks`, or later
///   if the work handed off before it and its own are counted to take the runners longer
///   ([`Lockstep::worker_budget`]; the tick waits for the worker if it is late; it is never
///   applied early) and never preempted; searches are handed off only while the runners are
///   counted to finish them in `worker_ticks` ticks;
///   a region map or jump table is used from `region_ticks` after its build starts;
/// - units are moved, pushed and repathed in the order of their
///   [`LockstepKey`](crate::LockstepKey)s (their entities where they have none), never in
///   archetype storage order; requests are queued in the order the game made them; the
///   plugin's maps use fixed hashers;
/// - movement uses only IEEE `+ - * /` and `sqrt`, and `libm` for anything transcendental (it
///   does in every mode);
/// - [`NavChecksum`](crate::NavChecksum) hashes the navigation state every tick, to send
///   between clients and compare (desync detection).
///
/// Deltas come from Bevy's `Time`: in `FixedUpdate` they are the fixed timestep's, the same on
/// every machine.
#[derive(Clone, Debug, PartialEq, Reflect)]
pub struct Lockstep {
    /// Ticks between handing a search to a worker and applying its result (at least 1; more
    /// for a search counted to take the runners longer, see [`Lockstep::worker_budget`]). Too
    /// few and ticks wait for the workers; too many and every worker path comes that much
    /// later.
    pub worker_ticks: u32,
    /// The work one runner is expected to finish in a tick, counted like
    /// [`TilepathSettings::time_budget`] (nominal time of the searches' expansions, line checks
    /// and the rest, never timed): searches are handed off only while the work handed off and
    /// not yet taken back stays below this times the runners
    /// ([`WorkerMode::Async::max_in_flight`]) and [`Lockstep::worker_ticks`], so a result is
    /// done when its tick comes and the tick does not wait for it. Size it for the slowest
    /// machine the game supports: higher hands off more a tick (a burst of orders drains in
    /// fewer ticks) and ticks wait on slower machines
    /// ([`TilepathFrameStats::worker_wait`](crate::TilepathFrameStats::worker_wait)).
    pub worker_budget: Duration,
    /// Ticks between starting a region map's or a jump table's build (when a map or class
    /// appears, or after an unmarked edit) and using it; searches are flat (or scan) until then.
    pub region_ticks: u32,
}

impl Default for Lockstep {
    fn default() -> Self {
        Lockstep {
            worker_ticks: 2,
            worker_budget: Duration::from_millis(8),
            region_ticks: 30,
        }
    }
}

impl Default for TilepathSettings {
    fn default() -> Self {
        TilepathSettings {
            searches_per_frame: 32,
            max_inline_searches: 2,
            expansion_budget: 50_000,
            time_budget: Duration::from_micros(2000),
            workers: WorkerMode::Inline,
            search: SearchConfig {
                jump_points: true,
                ..SearchConfig::default()
            },
            jump_tables: true,
            ageing_frames: 10,
            smoothing: true,
            smooth_before_delivery: 12,
            claim_penalty: 3.0,
            follow_claim_penalty: 1.0,
            claim_radius: 8.0,
            avoid_stopped_units: true,
            stopped_unit_penalty: 20.0,
            record_expanded: false,
            share_searches: true,
            lanes: true,
            tree_cache: 4,
            user_priority: 100,
            hierarchical_beyond: 64,
            region_cluster: 16,
            crowd: CrowdSettings::default(),
            fog: FogSettings::default(),
            lockstep: None,
        }
    }
}

/// Crowd tuning of the movement plugin (Lester's notes on units in the way). Times are seconds,
/// distances tiles. Each unit's patience is its [`Mover::wait_time`](crate::Mover::wait_time).
#[derive(Clone, Debug, PartialEq, Reflect)]
pub struct CrowdSettings {
    /// A unit kept by stopped units from the last cells of its path, for four times its wait
    /// time, stops where it is if its goal is within this many steps
    /// ([`NavGrid::open_steps`](crate::core::NavGrid::open_steps): Chebyshev on eight-way
    /// squares) and a walk of at most this many steps away, not through a passage one cell
    /// wide (a wall or a gate between does not count as near), unless it is in such a passage
    /// itself (it would close it): its group has gathered around the goal and it is at the edge
    /// of the crowd.
    pub close_enough: i32,
    /// Times a unit steps aside for units meeting it head-on before it stops yielding (streams
    /// meeting on a bridge would otherwise take turns stepping aside forever).
    pub max_yields: u32,
    /// Repaths a unit kept in place tries before it just waits. A unit held back by a crowd
    /// it cannot push through searches again, round the crowd, after each
    /// [`CrowdSettings::walk_through_after`] seconds held, this many times at most, before it
    /// walks through the crowd.
    pub max_stuck_repaths: u32,
    /// Seconds a unit may wait without getting a tile closer to its goal before it walks
    /// through other units (never through walls) instead of waiting on: the last resort against
    /// gridlock. A unit queued behind another waiting unit waits three times as long (the jam
    /// is at the queue's front).
    pub walk_through_after: f32,
    /// Tiles a unit walks through other units once it starts to. Meanwhile it is never
    /// pushed, and with [`CrowdSettings::pushing`] it shoves the bodies it overlaps out of its
    /// way (but for others walking through).
    pub walk_through_for: f32,
    /// How far (in steps) an idle unit asked to make way looks for a free cell.
    pub make_way_reach: u32,
    /// Priority of the short searches of units making way or stepping aside (ahead of orders).
    pub errand_priority: i32,
    /// Pushing: bodies that overlap after the frame's moves are pushed apart, never onto
    /// blocked cells; units on their way walk on into standing ones in their way and shove
    /// them aside, out of their way (StarCraft-style). Off: units only wait for, go round, ask
    /// to make way and step aside for each other, and bodies may overlap.
    pub pushing: bool,
    /// The share of a push a standing (idle or arrived) unit takes when a unit on its way
    /// overlaps it, from 0 (it stands firm) to 1 (it is shoved all the way); units of the same
    /// kind share pushes equally.
    pub push_strength: f32,
    /// How fast a push moves a body at most, in tiles per second.
    pub push_speed: f32,
    /// Local avoidance (ORCA, [`avoid_velocity`](crate::core::avoid_velocity)): a moving unit
    /// with other units within [`CrowdSettings::neighbour_radius`] takes the velocity nearest its
    /// step along its path that keeps clear of them for
    /// [`CrowdSettings::avoidance_horizon`] seconds (each unit doing half of the avoiding) and
    /// of walls; it goes on along its path by that velocity's share along it and moves aside of
    /// it by the rest. Off by default: with pushing it halves the bodies overlapping in a dense
    /// stream through narrow gaps, but in two armies crossing (the RTS demo) it holds units in
    /// ORCA's standstills and costs more than it gains (see BENCHMARKS.md, crowds).
    pub avoidance: bool,
    /// Seconds ahead within which avoidance keeps units from touching.
    pub avoidance_horizon: f32,
    /// Tiles around a moving unit within which other units are avoided.
    pub neighbour_radius: f32,
    /// Passages one cell wide ([`NavGrid::is_one_wide`](crate::core::NavGrid::is_one_wide):
    /// bridges, gates in walls) carry one way at a time, like a single-track road: a unit enters
    /// one only if no unit comes through it the other way, and, while units wait at both ends,
    /// only in its direction's turn. Directions take turns of this many seconds (rightward or
    /// upward first), and a unit enters only if it can be through before its turn ends. Units
    /// waiting for a passage (or queued behind one that does) walk through others only after
    /// two turns more than [`CrowdSettings::walk_through_after`]. 0 turns the rule off.
    pub one_way_turn: f32,
    /// Cost, in tiles, that a wide unit's search (a class with a
    /// [`footprint`](crate::core::MoveClass::footprint)) adds at a passage one cell wide on its
    /// grid for every other wide unit whose path crosses it the other way
    /// ([`PassageTraffic`](crate::plugin::traffic::PassageTraffic)): two armies of tanks ordered
    /// past each other take two bridges when the detour costs less than the wait, instead of
    /// taking turns on one and jamming the ground between it and the next passage. A path
    /// delivered after traffic its search did not see (searched in the same frame as an army
    /// coming the other way) is searched again once. Narrow units neither count nor pay it, and
    /// only units the plugin's movement walks (with a [`Mover`](crate::Mover)) count. 0 turns
    /// it off.
    pub passage_traffic: f32,
}

impl Default for CrowdSettings {
    fn default() -> Self {
        CrowdSettings {
            close_enough: 16,
            max_yields: 3,
            max_stuck_repaths: 2,
            walk_through_after: 2.0,
            walk_through_for: 3.0,
            make_way_reach: 6,
            errand_priority: 10,
            pushing: true,
            push_strength: 0.8,
            push_speed: 6.0,
            avoidance: false,
            avoidance_horizon: 1.0,
            neighbour_radius: 2.0,
            one_way_turn: 6.0,
            passage_traffic: 8.0,
        }
    }
}

/// Fog of war (Lester: units that do not know the whole map). With it on, a unit with a
/// [`PlayerId`](crate::PlayerId) plans on what its player has seen: cells no unit of the player
/// has seen are planned as terrain kind [`FogSettings::assumed`], whatever they really are;
/// units reveal the cells within their [`Sight`](crate::Sight); and when a revealed cell turns
/// out other than assumed, the player's units whose paths cross it plan again
/// ([`PathOrigin::Revealed`](crate::PathOrigin::Revealed)). Seen cells stay known (and follow
/// later edits). Units without a `PlayerId` know the whole map.
#[derive(Clone, Debug, PartialEq, Reflect)]
pub struct FogSettings {
    /// On or off (off by default); turning it on or off re-plans nothing by itself, later
    /// requests use the new setting.
    pub enabled: bool,
    /// The terrain kind assumed of unseen cells ([`NORMAL`](crate::core::NORMAL): open ground;
    /// [`BLOCKED`](crate::core::BLOCKED): plan only through what was seen).
    pub assumed: u8,
    /// Sight radius in tiles of units without a [`Sight`](crate::Sight).
    pub sight: f32,
}

impl Default for FogSettings {
    fn default() -> Self {
        FogSettings {
            enabled: false,
            assumed: crate::core::NORMAL,
            sight: 6.0,
        }
    }
}
