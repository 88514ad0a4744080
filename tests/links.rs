//! Links between cells that are not neighbours: every search mode (A* with each admissible
//! heuristic, jump point search, nearest-of-several, the shared backward search, region maps)
//! returns the cost of a reference Dijkstra over cells and crossings written from the rules and
//! the links' fields alone, and islands' reachability agrees with it, on random grids with
//! random links (two-way, one-way, closed, costed, needing keys the grid holds or not); and the
//! API's edges.

use bevy::math::Vec2;
use bevy_tilepath::core::*;
use proptest::prelude::*;

mod reference;
use reference::{admissible, grid_strategy, link_steps, reference_costs_with, rule_step};

fn links_strategy() -> impl Strategy<Value = Vec<Link>> {
    links_within(14, 6)
}

/// Up to `count` links between cells of a `size` x `size` square (wrapped onto smaller grids).
fn links_within(size: i32, count: usize) -> impl Strategy<Value = Vec<Link>> {
    let link = (
        (0..size, 0..size, 0..size, 0..size),
        // Costs in quarter tiles: 0 (a teleporter) to 10 tiles.
        0u32..40,
        any::<bool>(),
        prop_oneof![5 => Just(true), 1 => Just(false)],
        keys_strategy(),
    )
        .prop_map(|((ax, ay, bx, by), quarters, two_way, open, keys)| Link {
            from: Cell::new(ax, ay),
            to: Cell::new(bx, by),
            cost: quarters as f32 / 4.0,
            two_way,
            open,
            capacity: 0,
            keys,
            walked: false,
        });
    proptest::collection::vec(link, 0..count)
}

/// Keys: none (anyone crosses) most often, else one of two keys or both.
fn keys_strategy() -> impl Strategy<Value = LinkKeys> {
    prop_oneof![
        4 => Just(LinkKeys::NONE),
        1 => Just(LinkKeys::key(0)),
        1 => Just(LinkKeys::key(1)),
        1 => Just(LinkKeys::key(0).with(1)),
    ]
}

/// Adds `links` (ends wrapped onto the grid; links joining a cell to itself dropped); the links
/// on the grid.
fn add_links(grid: &mut NavGrid, links: &[Link]) -> Vec<Link> {
    let (w, h) = (grid.width() as i32, grid.height() as i32);
    let mut added = Vec::new();
    for l in links {
        let l = Link {
            from: Cell::new(l.from.x % w, l.from.y % h),
            to: Cell::new(l.to.x % w, l.to.y % h),
            ..*l
        };
        if l.from != l.to {
            grid.add_link(l).unwrap();
            added.push(l);
        }
    }
    added
}

/// A search's start and goal (wrapped onto the grid), made walkable.
fn open_ends(grid: &mut NavGrid, (sx, sy): (i32, i32), (gx, gy): (i32, i32)) -> (Cell, Cell) {
    let (w, h) = (grid.width() as i32, grid.height() as i32);
    let (start, goal) = (Cell::new(sx % w, sy % h), Cell::new(gx % w, gy % h));
    grid.set_walkable(start, true).unwrap();
    grid.set_walkable(goal, true).unwrap();
    (start, goal)
}

/// A step of a path: a legal move's cost by the rules, or a crossing's.
fn step_cost(grid: &NavGrid, crossings: &[(Cell, Cell, u64)], a: Cell, b: Cell) -> Option<u64> {
    let crossing = crossings
        .iter()
        .filter(|&&(f, t, _)| f == a && t == b)
        .map(|&(_, _, c)| c)
        .min();
    match (rule_step(grid, a, b), crossing) {
        (Some(s), Some(c)) => Some(s.min(c)),
        (s, c) => s.or(c),
    }
}

/// A region map's answer against the reference cost: a path whose own steps cost what it says,
/// no cheaper than the reference (a route through the region map may be a little dearer),
/// found exactly when the reference finds one.
fn region_path_is_sound(
    grid: &NavGrid,
    crossings: &[(Cell, Cell, u64)],
    (start, goal): (Cell, Cell),
    found: Result<Path, PathError>,
    reference: Option<u64>,
) -> Result<(), TestCaseError> {
    match (found, reference) {
        (Ok(p), Some(c)) => {
            prop_assert!(
                p.cost >= c,
                "region map {} under the reference {}",
                p.cost,
                c
            );
            let sum: Option<u64> = p
                .cells
                .windows(2)
                .map(|s| step_cost(grid, crossings, s[0], s[1]))
                .sum();
            prop_assert_eq!(sum, Some(p.cost), "the path's own steps: {:?}", p.cells);
            prop_assert_eq!((p.cells[0], *p.cells.last().unwrap()), (start, goal));
        }
        (Err(PathError::Unreachable), None) => {}
        (r, c) => prop_assert!(false, "region map {:?} vs reference {:?}", r, c),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn every_search_crosses_links_at_the_reference_cost(
        (grid, _) in grid_strategy(),
        links in links_strategy(),
        held in keys_strategy(),
        sx in 0i32..14, sy in 0i32..14, gx in 0i32..14, gy in 0i32..14,
    ) {
        let mut grid = grid;
        let (start, goal) = open_ends(&mut grid, (sx, sy), (gx, gy));
        let links = add_links(&mut grid, &links);
        // The keys come after the links: the crossings are rebuilt for them.
        grid.set_held_keys(held);
        let crossings = link_steps(&grid, &links);
        let w = grid.width() as i32;
        let reference = reference_costs_with(&grid, start, &crossings)[(goal.y * w + goal.x) as usize];
        prop_assert_eq!(grid.reaches(start, goal), reference.is_some(), "reachability");
        if let Some(c) = reference {
            prop_assert!(grid.cost_bound(start, goal) <= c, "cost_bound {} over {}", grid.cost_bound(start, goal), c);
        }
        for h in admissible(grid.rules()) {
            for jump_points in [false, true] {
                let cfg = SearchConfig { heuristic: h, jump_points, ..Default::default() };
                match (find_path(&grid, start, goal, &cfg), reference) {
                    (Ok(p), Some(c)) => {
                        prop_assert_eq!(p.cost, c, "heuristic {:?}", h);
                        let sum: Option<u64> = p.cells.windows(2).map(|s| step_cost(&grid, &crossings, s[0], s[1])).sum();
                        prop_assert_eq!(sum, Some(c), "the path's own steps: {:?}", p.cells);
                        prop_assert_eq!(p.cells[0], start);
                        prop_assert_eq!(*p.cells.last().unwrap(), goal);
                    }
                    (Err(PathError::Unreachable), None) => {}
                    (r, c) => prop_assert!(false, "search {:?} vs reference {:?}", r, c),
                }
            }
        }
        // Nearest of several: the goal and a cell beside the start's mirror.
        let other = Cell::new(w - 1 - start.x, grid.height() as i32 - 1 - start.y);
        let costs = reference_costs_with(&grid, start, &crossings);
        let best = [goal, other].iter().filter_map(|c| costs[(c.y * w + c.x) as usize]).min();
        match (find_nearest(&grid, start, &[goal, other], &SearchConfig::default()), best) {
            (Ok(p), Some(c)) => prop_assert_eq!(p.cost, c, "nearest"),
            (Err(PathError::Unreachable), None) => {}
            (r, c) => prop_assert!(false, "nearest {:?} vs reference {:?}", r, c),
        }
        // The shared backward search.
        let mut tree = GoalTree::new();
        tree.begin(&grid, goal, &[], Heuristic::Octile).unwrap();
        tree.add_starts(&grid, &[start]);
        while tree.step(&grid, 64) == TreeStep::Pending {}
        prop_assert_eq!(tree.path_from(&grid, start).map(|p| p.cost), reference, "goal tree");
        // Region maps (links are edges between their clusters).
        if !grid.is_hex() && grid.has_links() {
            let regions = RegionMap::build(&grid, 4);
            let found = find_path_hierarchical(&grid, &regions, start, goal, &SearchConfig::default());
            region_path_is_sound(&grid, &crossings, (start, goal), found, reference)?;
        }
    }

    #[test]
    fn smoothing_keeps_both_ends_of_every_crossing(
        (grid, _) in grid_strategy(),
        links in links_strategy(),
        sx in 0i32..14, sy in 0i32..14, gx in 0i32..14, gy in 0i32..14,
        radius in prop_oneof![Just(0.0f32), 0.05f32..0.45],
    ) {
        let mut grid = grid;
        add_links(&mut grid, &links);
        let start = Cell::new(sx % grid.width() as i32, sy % grid.height() as i32);
        let goal = Cell::new(gx % grid.width() as i32, gy % grid.height() as i32);
        if let Ok(p) = find_path(&grid, start, goal, &SearchConfig::default()) {
            let hops: Vec<(Vec2, Vec2)> = p.cells.windows(2)
                .filter(|s| rule_step(&grid, s[0], s[1]).is_none())
                .map(|s| (grid.cell_center(s[0]), grid.cell_center(s[1])))
                .collect();
            for smooth in [smooth_path(&grid, &p.cells, radius), Smoother::forward(&grid, &p.cells, radius).finish_in_steps(&grid, 1, || {})] {
                for &(a, b) in &hops {
                    prop_assert!(smooth.windows(2).any(|s| s[0] == a && s[1] == b), "crossing {:?} -> {:?} not kept in {:?}", a, b, smooth);
                }
                // Every other segment is walkable, or a raw step of the path.
                let raw: Vec<Vec2> = p.cells.iter().map(|&c| grid.cell_center(c)).collect();
                for s in smooth.windows(2) {
                    let raw_step = raw.windows(2).any(|r| r == s);
                    prop_assert!(raw_step || walkable(&grid, s[0], s[1], radius), "segment {:?}", s);
                }
            }
        }
    }
}

/// Eight-way grids of one terrain without corner cutting (where jump point search runs), a
/// quarter of their cells walls.
fn open_grid_strategy() -> impl Strategy<Value = NavGrid> {
    (2u32..24, 2u32..24).prop_flat_map(|(w, h)| {
        proptest::collection::vec(
            prop_oneof![3 => Just(1u8), 1 => Just(0u8)],
            (w * h) as usize,
        )
        .prop_map(move |terrain| {
            NavGrid::from_terrain(w, h, MoveRules::default(), &terrain).unwrap()
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    /// Jump point search, scanning and with a jump table (kept up to date as links come and
    /// go), crosses links at the reference cost: its jumps stop at links' ends.
    #[test]
    fn jump_points_cross_links_at_the_reference_cost(
        grid in open_grid_strategy(),
        links in links_strategy(),
        late in links_strategy(),
        held in keys_strategy(),
        sx in 0i32..24, sy in 0i32..24, gx in 0i32..24, gy in 0i32..24,
    ) {
        let mut grid = grid;
        // The keys come before the links (the table's grid is a clone: it holds them too).
        grid.set_held_keys(held);
        let (start, goal) = open_ends(&mut grid, (sx, sy), (gx, gy));
        let mut links = add_links(&mut grid, &links);
        let mut tabled = grid.clone();
        tabled.build_jump_table();
        // Links added and removed after the table was built.
        let late = add_links(&mut tabled, &late);
        for (id, _) in tabled.links().skip(links.len()).step_by(2).map(|(id, l)| (id, *l)).collect::<Vec<_>>() {
            tabled.remove_link(id).unwrap();
        }
        let kept: Vec<Link> = tabled.links().skip(links.len()).map(|(_, l)| *l).collect();
        prop_assert!(kept.len() <= late.len().div_ceil(2) + 1);
        for &l in &kept {
            grid.add_link(l).unwrap();
        }
        links.extend(kept);
        prop_assert!(grid.jump_points_apply());
        let crossings = link_steps(&grid, &links);
        let w = grid.width() as i32;
        let reference = reference_costs_with(&grid, start, &crossings)[(goal.y * w + goal.x) as usize];
        let cfg = SearchConfig { jump_points: true, ..Default::default() };
        for g in [&grid, &tabled] {
            let mut search = AStar::new();
            let found = search.begin(g, start, goal, &cfg).and_then(|()| search.finish(g));
            match (found, reference) {
                (Ok(p), Some(c)) => {
                    prop_assert!(search.used_jump_points());
                    prop_assert_eq!(p.cost, c, "table {}", g.has_jump_table());
                    let sum: Option<u64> = p.cells.windows(2).map(|s| step_cost(g, &crossings, s[0], s[1])).sum();
                    prop_assert_eq!(sum, Some(c), "the path's own steps: {:?}", p.cells);
                }
                (Err(PathError::Unreachable), None) => {}
                (r, c) => prop_assert!(false, "search {:?} vs reference {:?}", r, c),
            }
        }
    }
}

#[test]
fn a_crossing_as_dear_as_a_blocked_line_is_kept_as_a_crossing() {
    // A link four tiles long along a row whose cells between its ends are partly walls: jump
    // point search reaches the exit at the cost of a four-step jump, and must keep the
    // crossing, not fill in the line.
    let rows = ["########", "#####..#", "###..###", "##.#####"];
    let terrain: Vec<u8> = rows
        .iter()
        .flat_map(|r| r.bytes().map(|b| u8::from(b == b'#')))
        .collect();
    let mut grid = NavGrid::from_terrain(8, 4, MoveRules::default(), &terrain).unwrap();
    let link = Link::one_way(Cell::new(3, 1), Cell::new(7, 1), 4.0);
    grid.add_link(link).unwrap();
    let (start, goal) = (Cell::new(0, 0), Cell::new(3, 3));
    let crossings = link_steps(&grid, &[link]);
    let cfg = SearchConfig {
        jump_points: true,
        ..Default::default()
    };
    for table in [false, true] {
        if table {
            grid.build_jump_table();
        }
        let path = find_path(&grid, start, goal, &cfg).unwrap();
        let sum: Option<u64> = path
            .cells
            .windows(2)
            .map(|s| step_cost(&grid, &crossings, s[0], s[1]))
            .sum();
        assert_eq!(sum, Some(path.cost), "{:?}", path.cells);
        assert!(
            path.cells
                .windows(2)
                .any(|w| w == [Cell::new(3, 1), Cell::new(7, 1)])
        );
    }
}

fn wall_with_gap(gap: Option<i32>) -> NavGrid {
    let mut grid = NavGrid::new(20, 10).unwrap();
    for y in 0..10 {
        if Some(y) != gap {
            grid.set_walkable(Cell::new(10, y), false).unwrap();
        }
    }
    grid
}

#[test]
fn a_one_way_link_is_crossed_one_way() {
    let mut grid = wall_with_gap(None);
    let (west, east) = (Cell::new(2, 5), Cell::new(18, 5));
    assert!(!grid.reaches(west, east));
    grid.add_link(Link::one_way(Cell::new(9, 5), Cell::new(11, 5), 2.0))
        .unwrap();
    assert!(grid.reaches(west, east));
    assert!(!grid.reaches(east, west));
    assert!(!grid.connected(west, east));
    let cfg = SearchConfig::default();
    let there = find_path(&grid, west, east, &cfg).unwrap();
    // 7 steps, the drop (2 tiles), 7 steps.
    assert_eq!(there.length, 16.0);
    assert_eq!(
        find_path(&grid, east, west, &cfg),
        Err(PathError::Unreachable)
    );
    // The nearest reachable cell to the west, from the east: on the east side.
    let near = SearchConfig {
        goal_policy: GoalPolicy::NearestReachable,
        ..cfg
    };
    let back = find_path(&grid, east, west, &near).unwrap();
    assert_eq!(back.goal, Cell::new(11, 5));
}

#[test]
fn a_link_dearer_than_the_walk_round_is_not_taken_and_a_closed_door_reroutes() {
    // A gap at the wall's top; a door across the middle.
    let mut grid = wall_with_gap(Some(0));
    let cfg = SearchConfig::default();
    let (a, b) = (Cell::new(8, 5), Cell::new(12, 5));
    let walk = find_path(&grid, a, b, &cfg).unwrap();
    let door = grid
        .add_link(Link::two_way(Cell::new(9, 5), Cell::new(11, 5), 2.0))
        .unwrap();
    let through = find_path(&grid, a, b, &cfg).unwrap();
    assert_eq!(through.length, 4.0);
    assert!(through.cost < walk.cost);
    // A toll of 20 tiles: the walk round through the gap is cheaper.
    let link = grid.remove_link(door).unwrap();
    assert_eq!(grid.link(door), None);
    let toll = grid.add_link(Link { cost: 20.0, ..link }).unwrap();
    assert_eq!(find_path(&grid, a, b, &cfg).unwrap().cost, walk.cost);
    // Closed, the door is not crossed whatever it costs; the version tells searches.
    grid.set_link_open(toll, true).unwrap();
    let v = grid.version();
    grid.set_link_open(toll, false).unwrap();
    assert!(grid.version() > v);
    assert_eq!(find_path(&grid, a, b, &cfg).unwrap().cost, walk.cost);
    assert_eq!(grid.links().count(), 1);
}

#[test]
fn a_search_under_way_restarts_when_a_door_opens() {
    let mut grid = wall_with_gap(Some(0));
    let door = grid
        .add_link(Link::two_way(Cell::new(9, 5), Cell::new(11, 5), 1.0).closed())
        .unwrap();
    let mut search = AStar::new();
    search
        .begin(
            &grid,
            Cell::new(2, 5),
            Cell::new(18, 5),
            &SearchConfig::default(),
        )
        .unwrap();
    assert_eq!(search.step(&grid, 3), SearchStep::Pending);
    grid.set_link_open(door, true).unwrap();
    let path = loop {
        match search.step(&grid, 3) {
            SearchStep::Pending => {}
            SearchStep::Found(p) => break p,
            SearchStep::Failed(e) => panic!("{e}"),
        }
    };
    assert!(
        path.cells
            .windows(2)
            .any(|w| w == [Cell::new(9, 5), Cell::new(11, 5)])
    );
}

#[test]
fn a_link_to_a_blocked_cell_waits_until_it_opens() {
    let mut grid = wall_with_gap(None);
    let exit = Cell::new(11, 5);
    grid.set_walkable(exit, false).unwrap();
    grid.add_link(Link::two_way(Cell::new(9, 5), exit, 1.0))
        .unwrap();
    let (west, east) = (Cell::new(2, 5), Cell::new(18, 5));
    assert!(!grid.reaches(west, east));
    assert!(find_path(&grid, west, east, &SearchConfig::default()).is_err());
    grid.set_walkable(exit, true).unwrap();
    assert!(grid.connected(west, east));
    assert!(find_path(&grid, west, east, &SearchConfig::default()).is_ok());
}

#[test]
fn bad_links_are_errors() {
    let mut grid = NavGrid::new(8, 8).unwrap();
    let v = grid.version();
    let c = Cell::new(1, 1);
    assert_eq!(
        grid.add_link(Link::two_way(c, Cell::new(8, 1), 1.0)),
        Err(LinkError::OutOfBounds(Cell::new(8, 1)))
    );
    assert_eq!(
        grid.add_link(Link::two_way(c, c, 1.0)),
        Err(LinkError::SameCell(c))
    );
    assert!(matches!(
        grid.add_link(Link::two_way(c, Cell::new(5, 5), f32::NAN)),
        Err(LinkError::BadCost(_))
    ));
    assert_eq!(
        grid.add_link(Link::two_way(c, Cell::new(5, 5), -1.0)),
        Err(LinkError::BadCost(-1.0))
    );
    assert_eq!(
        grid.set_link_open(LinkId(3), false),
        Err(LinkError::UnknownLink(LinkId(3)))
    );
    assert_eq!(
        grid.remove_link(LinkId(0)),
        Err(LinkError::UnknownLink(LinkId(0)))
    );
    assert!(!grid.has_links());
    assert_eq!(grid.version(), v, "a refused link changes nothing");
}

/// Square eight-way or four-way grids of 16 to 40 cells a side, a quarter of their cells
/// walls, some terrain dearer.
fn large_grid_strategy() -> impl Strategy<Value = NavGrid> {
    (16u32..40, 16u32..40, any::<bool>()).prop_flat_map(|(w, h, four)| {
        proptest::collection::vec(
            prop_oneof![6 => Just(1u8), 2 => Just(0u8), 1 => 2u8..5],
            (w * h) as usize,
        )
        .prop_map(move |terrain| {
            let rules = MoveRules {
                topology: if four {
                    Topology::Four
                } else {
                    Topology::Eight
                },
                ..MoveRules::default()
            };
            NavGrid::from_terrain(w, h, rules, &terrain).unwrap()
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Region maps with links as edges: every path a hierarchical search finds walks by the
    /// rules and crossings and costs no less than the reference, it finds one exactly when the
    /// reference does, and a map brought up to date after links open, close, come, go and
    /// their ends are walled or freed is the map built afresh.
    #[test]
    fn region_maps_cross_links_and_follow_their_changes(
        grid in large_grid_strategy(),
        cluster in 4u32..9,
        links in links_within(40, 12),
        late in links_within(40, 4),
        held in keys_strategy(),
        ends in proptest::collection::vec((0i32..40, 0i32..40, 0i32..40, 0i32..40), 4),
        walls in proptest::collection::vec((0usize..16, any::<bool>()), 3),
    ) {
        let mut grid = grid;
        grid.set_held_keys(held);
        let links = add_links(&mut grid, &links);
        let mut regions = RegionMap::build(&grid, cluster);
        let w = grid.width() as i32;
        let crossings = link_steps(&grid, &links);
        for &(sx, sy, gx, gy) in &ends {
            let (start, goal) = (Cell::new(sx % w, sy % grid.height() as i32), Cell::new(gx % w, gy % grid.height() as i32));
            if !grid.is_walkable(start) || !grid.is_walkable(goal) {
                continue;
            }
            let reference = reference_costs_with(&grid, start, &crossings)[(goal.y * w + goal.x) as usize];
            let found = find_path_hierarchical(&grid, &regions, start, goal, &SearchConfig::default());
            region_path_is_sound(&grid, &crossings, (start, goal), found, reference)?;
        }
        // Changes: every other link toggled, one removed, new ones added, some ends walled or
        // freed; the map follows each batch.
        let ids: Vec<LinkId> = grid.links().map(|(id, _)| id).collect();
        for (k, &id) in ids.iter().enumerate().step_by(2) {
            let open = grid.link(id).unwrap().open;
            grid.set_link_open(id, !open).unwrap();
            if k == 2 {
                grid.remove_link(id).unwrap();
            }
        }
        regions.update(&grid, []);
        prop_assert!(regions.is_current(&grid));
        prop_assert_eq!(regions.links(), RegionMap::build(&grid, cluster).links());
        add_links(&mut grid, &late);
        let mut changed = Vec::new();
        let all: Vec<Link> = grid.links().map(|(_, l)| *l).collect();
        for &(k, walkable) in &walls {
            if let Some(l) = all.get(k % all.len().max(1)) {
                grid.set_walkable(l.from, walkable).unwrap();
                changed.push(l.from);
            }
        }
        regions.update(&grid, changed);
        let fresh = RegionMap::build(&grid, cluster);
        prop_assert_eq!(regions.node_count(), fresh.node_count());
        prop_assert_eq!(regions.links(), fresh.links());
    }
}

#[test]
fn a_region_map_routes_through_a_teleporter_and_follows_its_door() {
    // A wall down the middle of a 64 x 64 map with no way through but a teleporter.
    let mut grid = NavGrid::new(64, 64).unwrap();
    for y in 0..64 {
        grid.set_walkable(Cell::new(32, y), false).unwrap();
    }
    let (a, b) = (Cell::new(30, 10), Cell::new(34, 50));
    let id = grid.add_link(Link::two_way(a, b, 2.0)).unwrap();
    let mut regions = RegionMap::build(&grid, 16);
    let (start, goal) = (Cell::new(2, 2), Cell::new(60, 60));
    let route = regions
        .route(&grid, start, goal)
        .expect("a route through the teleporter");
    assert!(
        route.windows(2).any(|w| w == [a, b]),
        "the route crosses the link: {route:?}"
    );
    let config = SearchConfig::default();
    let flat = find_path(&grid, start, goal, &config).unwrap();
    let mut search = AStar::new();
    let mut hierarchical = HierarchicalSearch::begin(&grid, &regions, start, goal, &config)
        .unwrap()
        .expect("far apart: through the region map");
    let path = loop {
        match hierarchical.step(&grid, &mut search, 256) {
            SearchStep::Pending => {}
            SearchStep::Found(p) => break p,
            SearchStep::Failed(e) => panic!("{e:?}"),
        }
    };
    assert!(path.cells.windows(2).any(|w| w == [a, b]));
    // Not exact (the route keeps to transitions at the ends of the open borders' runs, as on a
    // map without links): 5 % dearer here.
    assert!(
        path.cost as f64 <= flat.cost as f64 * 1.08,
        "{} vs {}",
        path.cost,
        flat.cost
    );
    // The door shut: no route (the wall is whole), and the map says so without rebuilding.
    grid.set_link_open(id, false).unwrap();
    regions.update(&grid, []);
    assert_eq!(regions.route(&grid, start, goal), None);
    grid.set_link_open(id, true).unwrap();
    regions.update(&grid, []);
    assert!(regions.route(&grid, start, goal).is_some());
}
