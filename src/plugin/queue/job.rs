//! One search to run ([`Job`]), how it begins against a grid with its overlay, and what it
//! produced ([`SearchResult`], the same for inline and worker searches).

use bevy::prelude::*;

use crate::core::{
    AStar, Cell, CellOverlay, CostModel, GoalPolicy, HierarchicalSearch, NavGrid, Path, PathError,
    RegionMap, SearchConfig, cells_around,
};
use crate::plugin::claims::Claims;
use crate::plugin::classes::ClassId;
use crate::plugin::map::NavMap;
use crate::plugin::outcomes::SearchKind;
use crate::plugin::pursuit::Anchors;
use crate::plugin::traffic::PassageTraffic;

use super::refine::Rest;
use crate::plugin::request::{PathGoal, PathOrigin, PathRequest};
use crate::plugin::settings::TilepathSettings;

/// The goal of a job, resolved to cells.
#[derive(Clone, Debug)]
pub(crate) enum JobGoal {
    Single(Cell),
    Nearest(Vec<Cell>),
    /// A group order's slot, its path shared up to near `target`.
    Slot {
        slot: Cell,
        target: Cell,
    },
}

/// One validated request, waiting or being searched.
#[derive(Clone, Debug)]
pub(crate) struct Job {
    pub(crate) entity: Entity,
    pub(crate) ticket: u64,
    pub(crate) map: Entity,
    /// The unit's class: the grid of the map it searches.
    pub(crate) class: ClassId,
    pub(crate) goal: JobGoal,
    pub(crate) policy: GoalPolicy,
    pub(crate) priority: i32,
    /// Frame it entered the waiting list.
    pub(crate) enqueued: u64,
    /// The request it answers (kept on the path for repaths).
    pub(crate) request: PathRequest,
    /// Searched alone even if its goal is shared (a shared search could not serve it).
    pub(crate) alone: bool,
    /// The frame its search priced passage traffic at, if it did (a wide unit's; see
    /// [`CrowdSettings::passage_traffic`](crate::CrowdSettings::passage_traffic)).
    pub(crate) priced: Option<u64>,
    /// Searched again because traffic its first search did not see came the other way: not
    /// searched again for that a second time.
    pub(crate) repriced: bool,
}

/// Tiles between `a` and `b` moving in 8 directions (a diagonal counted as one and a half), at
/// least 1: the size of a search between them, for the work it is expected to take.
pub(crate) fn tiles_between(a: Cell, b: Cell) -> u64 {
    let d = (a - b).abs();
    let (long, short) = (d.x.max(d.y) as u64, d.x.min(d.y) as u64);
    (long + short / 2).max(1)
}

impl Job {
    /// The size of its search from `start` (see [`tiles_between`]): to its goal, the slot of a
    /// group order's member, or the nearest of several goals.
    pub(crate) fn size_from(&self, start: Cell) -> u64 {
        match &self.goal {
            JobGoal::Single(g) | JobGoal::Slot { slot: g, .. } => tiles_between(start, *g),
            JobGoal::Nearest(goals) => goals
                .iter()
                .map(|&g| tiles_between(start, g))
                .min()
                .unwrap_or(1),
        }
    }

    /// The cell a shared search for this job grows from, if it can share one.
    pub(crate) fn shared_goal(&self) -> Option<Cell> {
        match self.goal {
            _ if self.alone => None,
            JobGoal::Single(g) => Some(g),
            JobGoal::Slot { target, .. } => Some(target),
            JobGoal::Nearest(_) => None,
        }
    }

    /// Whether this job serves a follow order ([`PathGoal::Entity`]): the game's own request (or
    /// its repath after an edit), or a follower's search after its target (`origin`
    /// [`PathOrigin::Pursuit`], whose request goes to a cell). Not a follower's repath after it
    /// got stuck ([`PathOrigin::Stuck`]), which goes round the units that held it like any.
    pub(crate) fn follows(&self, origin: Option<PathOrigin>) -> bool {
        origin == Some(PathOrigin::Pursuit)
            || origin != Some(PathOrigin::Stuck)
                && matches!(self.request.goal, PathGoal::Entity { .. })
    }

    /// Whether this job, starting at `start`, goes through the region map first: a single goal
    /// at least [`TilepathSettings::hierarchical_beyond`] tiles away, a search without turn
    /// penalty or expansion limit, a request that does not ask for a shortest path, and one of
    /// the game's, a repath after a grid edit or a follower's after its target (`origin`): the plugin's searches around units
    /// in the way stay flat, as the region map's route does not know where units stand. Classes
    /// that plan with a player's knowledge (fog of war) have no region map: they search flat.
    /// Where jump point search runs (`grid` of one terrain without penalties, with
    /// [`SearchConfig::jump_points`](crate::core::SearchConfig::jump_points)) every request is
    /// flat: an exact jump point search is faster than the region map's route and legs there
    /// (2,000 random requests on a 512 x 512 map of walls: 323-342 frames against 427-437).
    pub(crate) fn wants_regions(
        &self,
        start: Cell,
        origin: Option<PathOrigin>,
        settings: &TilepathSettings,
        grid: &NavGrid,
    ) -> bool {
        if settings.search.jumps_on(grid) {
            return false;
        }
        let goal = match self.goal {
            JobGoal::Single(g) | JobGoal::Slot { slot: g, .. } => g,
            JobGoal::Nearest(_) => return false,
        };
        let beyond = settings.hierarchical_beyond;
        beyond > 0
            && !self.request.optimal
            && matches!(
                origin,
                None | Some(PathOrigin::User | PathOrigin::GridEdit | PathOrigin::Pursuit)
            )
            && settings.search.turn_penalty == 0
            && settings.search.max_expansions.is_none()
            && (goal - start).abs().max_element() >= beyond as i32
    }
}

/// What a search produced, inline or on a worker.
pub(crate) struct SearchResult {
    pub(crate) job: Job,
    /// Grid version the search ran against.
    pub(crate) version: u64,
    pub(crate) result: Result<Path, PathError>,
    /// Smoothed waypoints in grid space (empty if smoothing is off or no path).
    pub(crate) smoothed: Vec<Vec2>,
    /// Whether it ran on a worker against a snapshot.
    pub(crate) worker: bool,
    /// Which search found it.
    pub(crate) search: SearchKind,
    /// The part of the path left to smooth after delivery.
    pub(crate) rest: Option<Rest>,
}

/// Starts `job`'s search from `start` with `overlay`: through `regions` when it is given and
/// its route serves the job (a hierarchical search is returned then), else a flat search in
/// `search`.
pub(crate) fn begin_any(
    search: &mut AStar,
    grid: &NavGrid,
    regions: Option<&RegionMap>,
    start: Cell,
    job: &Job,
    config: &SearchConfig,
    overlay: &Overlay,
) -> Result<Option<HierarchicalSearch>, PathError> {
    if let (Some(regions), JobGoal::Single(goal) | JobGoal::Slot { slot: goal, .. }) =
        (regions, &job.goal)
    {
        let config = SearchConfig {
            goal_policy: job.policy,
            ..overlay.config(config)
        };
        let cells = &overlay.cells;
        if let Some(h) =
            HierarchicalSearch::begin_with_overlay(grid, regions, start, *goal, &config, cells)?
        {
            return Ok(Some(h));
        }
    }
    begin(search, grid, start, job, config, overlay).map(|()| None)
}

/// Searches to a goal at most this many tiles away (on either axis) run plain A*, even where
/// jump point search is on.
const SHORT_PLAIN: i32 = 16;

/// `config` for a search from `start` to `goal` with `policy`: plain A* for a goal at most
/// [`SHORT_PLAIN`] tiles away (on open ground a jump point search's jumps scan to the map's
/// edges, far beyond a goal a few tiles away).
pub(crate) fn config_to(
    config: &SearchConfig,
    start: Cell,
    goal: Cell,
    policy: GoalPolicy,
) -> SearchConfig {
    let short = (goal - start).abs().max_element() <= SHORT_PLAIN;
    SearchConfig {
        goal_policy: policy,
        jump_points: config.jump_points && !short,
        ..*config
    }
}

/// Starts `job`'s search from `start` with `overlay` (and its detour bound: see
/// [`Overlay::config`]).
pub(crate) fn begin(
    search: &mut AStar,
    grid: &NavGrid,
    start: Cell,
    job: &Job,
    config: &SearchConfig,
    overlay: &Overlay,
) -> Result<(), PathError> {
    let config = &overlay.config(config);
    let overlay = &overlay.cells;
    match &job.goal {
        JobGoal::Single(goal) | JobGoal::Slot { slot: goal, .. } => {
            let config = config_to(config, start, *goal, job.policy);
            search.begin_with_overlay(grid, start, *goal, &config, overlay)
        }
        JobGoal::Nearest(goals) => {
            let config = SearchConfig {
                goal_policy: job.policy,
                ..*config
            };
            search.begin_nearest_with_overlay(grid, start, goals, &config, overlay)
        }
    }
}

/// What a claimed cell costs a search (tiles): [`TilepathSettings::follow_claim_penalty`] in a
/// follow order's (`follows`), else [`TilepathSettings::claim_penalty`].
pub(crate) fn claim_price(settings: &TilepathSettings, follows: bool) -> f32 {
    if follows {
        settings.follow_claim_penalty
    } else {
        settings.claim_penalty
    }
}

/// Turns every block in `cells` (stopped units' cells, and a stuck unit's jam) into
/// `price`: what a stopped unit costs in a follow order's search (see
/// [`TilepathSettings::follow_claim_penalty`]), or in a search's second attempt
/// ([`Overlay::soften`]).
pub(crate) fn price_stopped(cells: &mut [(Cell, CellOverlay)], price: u32) {
    for (_, o) in cells {
        if *o == CellOverlay::Blocked {
            *o = CellOverlay::Penalty(price);
        }
    }
}

/// The most a search from `start` to `goal` may cost going round an overlay's blocks (see
/// [`DETOUR_FACTOR`]): in `costs`, on terrain of `min_terrain` (the grid's cheapest, as the
/// search's estimate).
fn detour_bound(start: Cell, goal: Cell, costs: CostModel, min_terrain: u8) -> u64 {
    let d = (goal - start).abs();
    let straight = (d.max_element() - d.min_element()) as f64
        + d.min_element() as f64 * std::f64::consts::SQRT_2;
    let tiles = DETOUR_FACTOR * straight + DETOUR_TILES;
    u64::from(costs.from_tiles(tiles as f32)) * u64::from(min_terrain.max(1))
}

/// How far (steps) from a stuck unit the cells other units claim block its repath (see
/// [`Overlay::new`]).
const JAM_REACH: i32 = 6;

/// A way round the units an overlay blocks (stopped units near the searcher, a stuck unit's jam)
/// is searched for only as far as it costs at most this many times the straight distance to the
/// goal, plus [`DETOUR_TILES`], in tiles of the cheapest terrain (see [`Overlay::config`]).
const DETOUR_FACTOR: f64 = 2.0;
/// See [`DETOUR_FACTOR`].
const DETOUR_TILES: f64 = 40.0;

/// A search's overlay and its fallback: claimed cells of units near the searcher, cells of
/// stopped units (blocked first; see [`Overlay::soften`]), and for a wide unit the traffic
/// coming the other way through passages ([`with_traffic`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct Overlay {
    pub(crate) cells: Vec<(Cell, CellOverlay)>,
    /// Cost of a stopped unit's cell in the second attempt.
    stopped_penalty: u32,
    /// Whether it looked at passage traffic (a wide unit's, with the setting on), and whether
    /// it priced some (units came the other way).
    pub(crate) traffic: Option<bool>,
    /// The most a way round its blocks may cost (see [`DETOUR_FACTOR`]); `None` when it blocks
    /// nothing or the goal is one of several.
    max_cost: Option<u64>,
}

impl Overlay {
    /// The overlay for `job`'s unit starting at `start` on `map` (grown by the footprint of its
    /// class: a wide unit's center keeps that far from other units' cells). A follow order's
    /// search ([`Job::follows`]) leaves out the claims and cells of units following the same
    /// target (`anchors`: they move on with it), and prices the other claimed cells and stopped
    /// units' cells at [`TilepathSettings::follow_claim_penalty`] instead of a claim's price and
    /// a block. A unit's repath after it got stuck (`origin`) treats the cells other units
    /// claim within [`JAM_REACH`] steps of it as blocked, not as a penalty: it could not push
    /// through that crowd, so it takes another way round if there is one. A way round blocks is
    /// searched for only within [`DETOUR_FACTOR`]: past that (or with no way at all) the search's
    /// fallback ([`Overlay::soften`]) prices them instead. A tank sent 100 tiles round a jam at a
    /// bridge drove for half a minute past the rest; a search to a free cell walled in by
    /// standing units in a melee on a 1024 x 1024 map expanded the whole map before it failed.
    pub(crate) fn new(
        (claims, traffic, anchors): (&Claims, &PassageTraffic, &Anchors),
        settings: &TilepathSettings,
        job: &Job,
        map: &NavMap,
        start: Cell,
        origin: Option<PathOrigin>,
    ) -> Self {
        let costs = map.grid().rules().costs;
        let follows = job.follows(origin);
        let claimed = costs.from_tiles(claim_price(settings, follows));
        let target = anchors.target_of(job.entity).filter(|_| follows);
        let mut cells = claims.overlay_around(
            job.map,
            |e| e == job.entity || anchors.follows_one_of(e, target.as_slice()),
            (start, start),
            settings.claim_radius,
            claimed,
            settings.avoid_stopped_units,
        );
        if follows {
            price_stopped(&mut cells, claimed);
        }
        let footprint = map.footprint_of(job.class);
        let jam = origin == Some(PathOrigin::Stuck);
        if jam {
            for (c, o) in &mut cells {
                if (*c - start).abs().max_element() <= JAM_REACH {
                    *o = CellOverlay::Blocked;
                }
            }
        }
        let cells = grow_overlay(cells, footprint);
        let goal = match job.goal {
            JobGoal::Single(goal) | JobGoal::Slot { slot: goal, .. } => Some(goal),
            JobGoal::Nearest(_) => None,
        };
        let way = goal.map_or(Cell::ZERO, |goal| goal - start);
        let (cells, traffic) = with_traffic(
            cells,
            traffic,
            settings,
            (job.map, footprint, costs),
            |e| e == job.entity,
            way,
        );
        let blocks = cells.iter().any(|(_, o)| *o == CellOverlay::Blocked);
        let grid = map.grid_of(job.class);
        let max_cost = goal
            .filter(|_| blocks)
            .map(|goal| detour_bound(start, goal, costs, grid.min_terrain()));
        Overlay {
            cells,
            stopped_penalty: costs.from_tiles(settings.stopped_unit_penalty),
            traffic,
            max_cost,
        }
    }

    /// `config` for a search with this overlay: limited to [`Overlay::max_cost`] where it blocks
    /// cells (see [`DETOUR_FACTOR`]).
    pub(crate) fn config(&self, config: &SearchConfig) -> SearchConfig {
        SearchConfig {
            max_cost: self.max_cost.into_iter().chain(config.max_cost).min(),
            ..*config
        }
    }

    /// Stopped units are searched around as if blocked; when that leaves no path at all (a goal
    /// inside a crowd), the search runs again with them as a heavy penalty instead, so the unit
    /// still gets as close as it can and the movement layer stops it beside the crowd. `None`
    /// when there is nothing to soften.
    pub(crate) fn soften(&self) -> Option<Overlay> {
        self.cells
            .iter()
            .any(|(_, o)| *o == CellOverlay::Blocked)
            .then(|| {
                let mut cells = self.cells.clone();
                price_stopped(&mut cells, self.stopped_penalty);
                Overlay {
                    cells,
                    stopped_penalty: self.stopped_penalty,
                    traffic: self.traffic,
                    max_cost: None,
                }
            })
    }
}

/// `cells` (a wide unit's overlay on `map`, sorted by row then column) with the passage traffic
/// against `way` added ([`PassageTraffic::penalties`], at
/// [`CrowdSettings::passage_traffic`](crate::CrowdSettings::passage_traffic) a unit, in the
/// map's cost model), and whether any was (`None`: not looked at, for a narrow unit,
/// `footprint` 0, or with the setting at 0).
pub(crate) fn with_traffic(
    mut cells: Vec<(Cell, CellOverlay)>,
    traffic: &PassageTraffic,
    settings: &TilepathSettings,
    (map, footprint, costs): (Entity, u8, CostModel),
    is_member: impl Fn(Entity) -> bool,
    way: Cell,
) -> (Vec<(Cell, CellOverlay)>, Option<bool>) {
    let per_unit = costs.from_tiles(settings.crowd.passage_traffic);
    if footprint == 0 || per_unit == 0 {
        return (cells, None);
    }
    let extra = traffic.penalties(map, is_member, way, per_unit);
    if extra.is_empty() {
        return (cells, Some(false));
    }
    for (c, p) in extra {
        match cells.binary_search_by_key(&(c.y, c.x), |&(c, _)| (c.y, c.x)) {
            Ok(i) => {
                if let CellOverlay::Penalty(q) = &mut cells[i].1 {
                    *q = q.saturating_add(p);
                }
            }
            Err(i) => cells.insert(i, (c, CellOverlay::Penalty(p))),
        }
    }
    (cells, Some(true))
}

/// `cells` grown by `footprint` rings: every cell within that many rings of an overlaid cell
/// gets its overlay (blocked over a penalty, the larger of two penalties), so a wide unit's
/// center keeps its body off the cells of other units.
pub(crate) fn grow_overlay(
    cells: Vec<(Cell, CellOverlay)>,
    footprint: u8,
) -> Vec<(Cell, CellOverlay)> {
    if footprint == 0 || cells.is_empty() {
        return cells;
    }
    let mut grown: bevy::platform::collections::HashMap<Cell, CellOverlay> = Default::default();
    for (c, o) in cells {
        for n in cells_around(c, footprint) {
            let e = grown.entry(n).or_insert(o);
            *e = match (*e, o) {
                (CellOverlay::Blocked, _) | (_, CellOverlay::Blocked) => CellOverlay::Blocked,
                (CellOverlay::Penalty(a), CellOverlay::Penalty(b)) => {
                    CellOverlay::Penalty(a.max(b))
                }
            };
        }
    }
    let mut out: Vec<(Cell, CellOverlay)> = grown.into_iter().collect();
    out.sort_by_key(|&(c, _)| (c.y, c.x));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{CostModel, MoveRules, NavGrid};

    /// A job of `entity` on `map` for a unit of `class` going to `goal` (the game's request
    /// `request`).
    fn job_to(
        entity: Entity,
        map: Entity,
        class: ClassId,
        goal: Cell,
        request: PathRequest,
    ) -> Job {
        Job {
            entity,
            ticket: 0,
            map,
            class,
            goal: JobGoal::Single(goal),
            policy: GoalPolicy::Fail,
            priority: 0,
            enqueued: 0,
            request,
            alone: false,
            priced: None,
            repriced: false,
        }
    }

    #[test]
    fn stopped_units_soften_to_a_penalty_in_the_maps_own_cost_model() {
        let rules = MoveRules {
            costs: CostModel::LESTER,
            ..MoveRules::default()
        };
        let map = NavMap::new(
            NavGrid::with_rules(8, 8, rules).unwrap(),
            Vec2::ZERO,
            Vec2::ONE,
        );
        let map_entity = Entity::from_raw_u32(1).unwrap();
        let (me, other) = (
            Entity::from_raw_u32(2).unwrap(),
            Entity::from_raw_u32(3).unwrap(),
        );
        let mut claims = Claims::default();
        claims.set_stopped(map_entity, other, None, Some(Cell::new(3, 3)), 0);
        claims.claim(map_entity, Cell::new(4, 4), other);
        let settings = TilepathSettings::default();
        let goal = Cell::new(6, 6);
        let job = job_to(
            me,
            map_entity,
            ClassId::DEFAULT,
            goal,
            PathRequest::to_cell(goal),
        );
        let overlay = Overlay::new(
            (&claims, &PassageTraffic::default(), &Anchors::default()),
            &settings,
            &job,
            &map,
            Cell::new(1, 1),
            None,
        );
        assert!(
            overlay
                .cells
                .contains(&(Cell::new(3, 3), CellOverlay::Blocked))
        );
        // Lester's model: 10 per straight step, so 3 tiles of claim penalty are 30.
        assert!(
            overlay
                .cells
                .contains(&(Cell::new(4, 4), CellOverlay::Penalty(30)))
        );
        let soft = overlay.soften().expect("a stopped unit to soften");
        // 20 tiles in the same model: 200, not the exact model's 20 x 65536.
        assert!(
            soft.cells
                .contains(&(Cell::new(3, 3), CellOverlay::Penalty(200)))
        );
        assert!(soft.soften().is_none(), "nothing left to soften");
    }

    #[test]
    fn a_followers_search_leaves_out_the_claims_of_its_targets_other_followers() {
        let map = NavMap::new(NavGrid::new(8, 8).unwrap(), Vec2::ZERO, Vec2::ONE);
        let e = |i| Entity::from_raw_u32(i).unwrap();
        let (map_entity, me, fellow, stranger, target) = (e(1), e(2), e(3), e(4), e(5));
        let mut claims = Claims::default();
        claims.claim(map_entity, Cell::new(3, 3), fellow);
        claims.claim(map_entity, Cell::new(4, 4), stranger);
        let mut anchors = Anchors::default();
        anchors.follow(me, target);
        anchors.follow(fellow, target);
        anchors.follow(stranger, e(6));
        let settings = TilepathSettings::default();
        let job = |request| job_to(me, map_entity, ClassId::DEFAULT, Cell::new(6, 6), request);
        let overlay = |job: &Job, origin| {
            Overlay::new(
                (&claims, &PassageTraffic::default(), &anchors),
                &settings,
                job,
                &map,
                Cell::new(1, 1),
                origin,
            )
            .cells
        };
        let claimed = |cells: &[(Cell, CellOverlay)], c| cells.iter().any(|(x, _)| *x == c);
        // Its search after the target: the other follower's claim is left out, the stranger's
        // priced.
        let pursuit = overlay(
            &job(PathRequest::to_cell(Cell::new(6, 6))),
            Some(PathOrigin::Pursuit),
        );
        assert!(!claimed(&pursuit, Cell::new(3, 3)));
        assert!(claimed(&pursuit, Cell::new(4, 4)));
        // Not a follow search (a stuck repath of the follower): both priced.
        let stuck = overlay(
            &job(PathRequest::follow(target, 3.0)),
            Some(PathOrigin::Stuck),
        );
        assert!(claimed(&stuck, Cell::new(3, 3)) && claimed(&stuck, Cell::new(4, 4)));
    }

    #[test]
    fn a_stuck_units_repath_is_searched_around_the_crowd_near_it() {
        let mut map = NavMap::new(NavGrid::new(32, 32).unwrap(), Vec2::ZERO, Vec2::ONE);
        let key = crate::plugin::classes::ClassKey {
            class: crate::core::MoveClass::new(crate::core::TerrainCosts::default(), 1),
            player: None,
        };
        map.ensure_classes(std::slice::from_ref(&key), 1);
        let tank = crate::plugin::classes::NavClasses::default().intern(key);
        let map_entity = Entity::from_raw_u32(1).unwrap();
        let (me, other) = (
            Entity::from_raw_u32(2).unwrap(),
            Entity::from_raw_u32(3).unwrap(),
        );
        let mut claims = Claims::default();
        // Another unit claims a cell near the searcher and one far from it.
        claims.claim(map_entity, Cell::new(8, 5), other);
        claims.claim(map_entity, Cell::new(20, 5), other);
        let settings = TilepathSettings {
            claim_radius: 24.0,
            ..TilepathSettings::default()
        };
        let goal = Cell::new(28, 5);
        let job = |class| job_to(me, map_entity, class, goal, PathRequest::to_cell(goal));
        let start = Cell::new(4, 5);
        let at = |o: &Overlay, c: Cell| o.cells.iter().find(|(x, _)| *x == c).map(|(_, o)| *o);
        let none = PassageTraffic::default();
        let overlay = |class, origin| {
            Overlay::new(
                (&claims, &none, &Anchors::default()),
                &settings,
                &job(class),
                &map,
                start,
                Some(origin),
            )
        };
        // A tank's repath after it got stuck, and an infantryman's: blocked near, priced far.
        for class in [tank, ClassId::DEFAULT] {
            let stuck = overlay(class, PathOrigin::Stuck);
            assert_eq!(at(&stuck, Cell::new(8, 5)), Some(CellOverlay::Blocked));
            assert!(matches!(
                at(&stuck, Cell::new(20, 5)),
                Some(CellOverlay::Penalty(_))
            ));
            // Softened when that leaves no way at all.
            assert!(stuck.soften().is_some());
            // A way round the jam is searched for only as far as it is not too long: the goal
            // is 24 tiles away, so 2 x 24 + 40 tiles.
            let config = SearchConfig::default();
            let tiles = |n| Some(u64::from(map.grid().rules().costs.from_tiles(n)));
            assert_eq!(stuck.config(&config).max_cost, tiles(88.0));
            // Not where nothing is blocked, nor once the jam is priced.
            assert_eq!(
                overlay(class, PathOrigin::User).config(&config).max_cost,
                None
            );
            assert_eq!(stuck.soften().unwrap().config(&config).max_cost, None);
            // A game's own limit stays where it is lower.
            let own = SearchConfig {
                max_cost: Some(500),
                ..config
            };
            assert_eq!(stuck.config(&own).max_cost, Some(500));
        }
        // Its other searches pay a penalty as before.
        let ordered = overlay(tank, PathOrigin::User);
        assert!(matches!(
            at(&ordered, Cell::new(8, 5)),
            Some(CellOverlay::Penalty(_))
        ));
    }

    #[test]
    fn a_stopped_wide_unit_blocks_its_footprint_and_a_wide_searcher_keeps_clear() {
        let map_entity = Entity::from_raw_u32(1).unwrap();
        let (me, tank) = (
            Entity::from_raw_u32(2).unwrap(),
            Entity::from_raw_u32(3).unwrap(),
        );
        let mut claims = Claims::default();
        claims.set_stopped(map_entity, tank, None, Some(Cell::new(5, 5)), 1);
        let blocked = |cells: &[(Cell, CellOverlay)]| {
            let mut b: Vec<Cell> = cells
                .iter()
                .filter(|(_, o)| *o == CellOverlay::Blocked)
                .map(|(c, _)| *c)
                .collect();
            b.sort_by_key(|c| (c.y, c.x));
            b.dedup();
            b
        };
        let cells = claims.overlay_for(map_entity, me, Cell::new(1, 1), 8.0, 0, true);
        assert_eq!(blocked(&cells).len(), 9, "the tank's 3 x 3 cells");
        // A unit of footprint 1 keeps its center a ring further: 5 x 5.
        assert_eq!(blocked(&grow_overlay(cells, 1)).len(), 25);
        // It moves off: nothing blocked, and no footprint left behind.
        claims.set_stopped(map_entity, tank, Some(Cell::new(5, 5)), None, 0);
        let cells = claims.overlay_for(map_entity, me, Cell::new(1, 1), 8.0, 0, true);
        assert!(blocked(&cells).is_empty());
    }
}
