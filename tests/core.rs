//! Core properties: A* agrees with a plain reference Dijkstra (its step costs written from the
//! move rules alone) on random grids with random terrain
//! for every move rule (hexagonal grids among them) and admissible heuristic; on hexagonal grids
//! path lengths equal a breadth-first search's over the six axial neighbours; islands agree with search; the nearest-goal
//! Dijkstra picks the true nearest; bad input is an error, never a panic.

use bevy::math::Vec2;
use bevy_tilepath::core::*;
use proptest::prelude::*;

mod reference;
use reference::{admissible, grid_strategy, reference_costs, rule_step, rules_strategy};

/// Samples the segment every 1/100 tile and checks 16 points of the body's outline (shrunk by
/// 1e-3 so touching does not count) and its center against blocked cells.
fn body_stays_clear(grid: &NavGrid, a: Vec2, b: Vec2, radius: f32) -> bool {
    let n = (a.distance(b) * 100.0).ceil().max(1.0) as u32;
    (0..=n).all(|k| {
        let p = a.lerp(b, k as f32 / n as f32);
        let r = (radius - 1e-3).max(0.0);
        (0..16).all(|j| {
            let ang = j as f32 * std::f32::consts::TAU / 16.0;
            let q = p + Vec2::new(ang.cos(), ang.sin()) * r;
            // A point exactly on a boundary belongs to whichever side is free.
            let cells = [
                grid.cell_at(q + Vec2::splat(1e-4)),
                grid.cell_at(q - Vec2::splat(1e-4)),
                grid.cell_at(q + Vec2::new(1e-4, -1e-4)),
                grid.cell_at(q + Vec2::new(-1e-4, 1e-4)),
            ];
            cells.iter().any(|&c| grid.is_walkable(c))
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// A cell of a passage one cell wide is a walkable cell blocked (or off the grid) on two
    /// opposite sides, on every cell of random grids, edges included; never on hexagons.
    #[test]
    fn one_wide_cells_follow_the_rule_to_the_edges((grid, _) in grid_strategy()) {
        let blocked = |c: Cell| !grid.is_walkable(c);
        for y in -1..grid.height() as i32 + 1 {
            for x in -1..grid.width() as i32 + 1 {
                let c = Cell::new(x, y);
                let across = |dx: i32, dy: i32| {
                    blocked(Cell::new(x - dx, y - dy)) && blocked(Cell::new(x + dx, y + dy))
                };
                let rule = !grid.is_hex() && grid.is_walkable(c) && (across(1, 0) || across(0, 1));
                prop_assert_eq!(grid.is_one_wide(c), rule, "cell {:?}", c);
            }
        }
    }

    #[test]
    fn astar_cost_equals_reference((grid, _) in grid_strategy(), sx in 0i32..14, sy in 0i32..14, gx in 0i32..14, gy in 0i32..14) {
        let start = Cell::new(sx % grid.width() as i32, sy % grid.height() as i32);
        let goal = Cell::new(gx % grid.width() as i32, gy % grid.height() as i32);
        let w = grid.width() as i32;
        for h in admissible(grid.rules()) {
            let cfg = SearchConfig { heuristic: h, ..Default::default() };
            let result = find_path(&grid, start, goal, &cfg);
            if !grid.is_walkable(start) {
                prop_assert_eq!(result, Err(PathError::StartBlocked(start)));
                continue;
            }
            let reference = reference_costs(&grid, start)[(goal.y * w + goal.x) as usize];
            match (result, reference) {
                (Ok(p), Some(c)) => {
                    prop_assert_eq!(p.cost, c, "heuristic {:?}", h);
                    // The returned cells really cost that much.
                    let sum: u64 = p.cells.windows(2).map(|s| rule_step(&grid, s[0], s[1]).unwrap()).sum();
                    prop_assert_eq!(sum, c);
                    prop_assert_eq!(p.cells[0], start);
                    prop_assert_eq!(*p.cells.last().unwrap(), goal);
                    // Jump point search finds a path of the same cost (on the grids it runs on;
                    // A* on the others).
                    let jps = SearchConfig { jump_points: true, ..cfg };
                    let j = find_path(&grid, start, goal, &jps).unwrap();
                    prop_assert_eq!(j.cost, c, "jump points, heuristic {:?}", h);
                    let sum: u64 = j.cells.windows(2).map(|s| rule_step(&grid, s[0], s[1]).unwrap()).sum();
                    prop_assert_eq!(sum, c);
                    // A cost limit at the optimum still finds it (A* and jump points, plain and
                    // weighted); one below gives up.
                    for weight in [1.0, 1.5] {
                        for jump_points in [false, true] {
                            let at = SearchConfig { max_cost: Some(c), weight, jump_points, ..cfg };
                            let found = find_path(&grid, start, goal, &at);
                            prop_assert!(found.as_ref().is_ok_and(|p| weight > 1.0 || p.cost == c), "limit at the optimum {}: {:?}", c, found);
                            if c > 0 && weight == 1.0 {
                                let below = SearchConfig { max_cost: Some(c - 1), ..at };
                                let r = find_path(&grid, start, goal, &below);
                                prop_assert!(matches!(r, Err(PathError::LimitExceeded { .. })), "limit below the optimum: {:?}", r);
                            }
                        }
                    }
                }
                (Err(PathError::GoalBlocked(_)), None) => prop_assert!(!grid.is_walkable(goal)),
                (Err(PathError::Unreachable), None) => prop_assert!(!grid.connected(start, goal)),
                (r, c) => prop_assert!(false, "search {:?} vs reference {:?}", r, c),
            }
            // Islands agree with search.
            prop_assert_eq!(grid.connected(start, goal), reference.is_some());
        }
    }

    #[test]
    fn nearest_goal_is_the_true_nearest((grid, _) in grid_strategy(), sx in 0i32..14, sy in 0i32..14, goals in proptest::collection::vec((0i32..14, 0i32..14), 1..5)) {
        let start = Cell::new(sx % grid.width() as i32, sy % grid.height() as i32);
        prop_assume!(grid.is_walkable(start));
        let goals: Vec<Cell> = goals.iter().map(|&(x, y)| Cell::new(x % grid.width() as i32, y % grid.height() as i32)).collect();
        let w = grid.width() as i32;
        let reference = reference_costs(&grid, start);
        let best = goals.iter().filter_map(|g| reference[(g.y * w + g.x) as usize]).min();
        match (find_nearest(&grid, start, &goals, &SearchConfig::default()), best) {
            (Ok(p), Some(c)) => {
                prop_assert_eq!(p.cost, c);
                let i = p.goal_index.unwrap();
                prop_assert_eq!(goals[i], p.goal);
            }
            (Err(PathError::Unreachable), None) => {}
            (r, c) => prop_assert!(false, "nearest {:?} vs reference {:?}", r, c),
        }
    }

    #[test]
    fn islands_stay_correct_under_edits(w in 2u32..12, h in 2u32..12, hex in any::<bool>(), edits in proptest::collection::vec((0i32..12, 0i32..12, any::<bool>()), 1..60)) {
        let topology = if hex { Topology::Hex } else { Topology::Eight };
        let mut grid = NavGrid::with_rules(w, h, MoveRules { topology, ..Default::default() }).unwrap();
        for (x, y, walkable) in edits {
            let c = Cell::new(x % w as i32, y % h as i32);
            grid.set_walkable(c, walkable).unwrap();
        }
        let fresh = NavGrid::from_terrain(w, h, grid.rules(), &grid.cells().map(|c| grid.terrain(c).unwrap()).collect::<Vec<_>>()).unwrap();
        prop_assert_eq!(grid.island_count(), fresh.island_count());
        for a in grid.cells() {
            for b in grid.cells() {
                prop_assert_eq!(grid.connected(a, b), fresh.connected(a, b));
            }
        }
    }

    #[test]
    fn smoothing_never_lengthens_and_stays_walkable((grid, _) in grid_strategy(), sx in 0i32..14, sy in 0i32..14, gx in 0i32..14, gy in 0i32..14, radius in prop_oneof![Just(0.0f32), 0.05f32..0.45]) {
        let start = Cell::new(sx % grid.width() as i32, sy % grid.height() as i32);
        let goal = Cell::new(gx % grid.width() as i32, gy % grid.height() as i32);
        if let Ok(p) = find_path(&grid, start, goal, &SearchConfig::default()) {
            let raw: Vec<Vec2> = p.cells.iter().map(|&c| grid.cell_center(c)).collect();
            let smooth = smooth_path(&grid, &p.cells, radius);
            prop_assert!(polyline_length(&smooth) <= polyline_length(&raw) + 1e-4);
            prop_assert_eq!(smooth[0], raw[0]);
            prop_assert_eq!(*smooth.last().unwrap(), *raw.last().unwrap());
            for s in smooth.windows(2) {
                // Either a kept raw step (a legal grid move) or a walkable shortcut.
                let raw_step = raw.windows(2).any(|r| r[0] == s[0] && r[1] == s[1]);
                prop_assert!(raw_step || walkable(&grid, s[0], s[1], radius), "segment {:?} of {:?} raw {:?} r {}", s, smooth, raw, radius);
                if walkable(&grid, s[0], s[1], radius) {
                    prop_assert!(body_stays_clear(&grid, s[0], s[1], radius));
                }
            }
            // The corridor a unit walks: 8-connected (on hexagons, neighbours), from start to
            // goal, every cell walkable.
            let corridor = polyline_cells(&grid, &smooth);
            prop_assert_eq!(corridor[0], start);
            prop_assert_eq!(*corridor.last().unwrap(), p.goal);
            for w in corridor.windows(2) {
                let d = w[1] - w[0];
                if grid.is_hex() {
                    prop_assert!(grid.connecting_steps().contains(&d), "{:?}", corridor);
                } else {
                    prop_assert!(d.abs().max_element() == 1, "{:?}", corridor);
                }
            }
            prop_assert!(corridor.iter().all(|&c| grid.is_walkable(c)));
        }
    }

    /// The first leg the queue smooths before delivery: cell centers of the path in order, each
    /// segment walkable (or a raw step), ending at or past the asked cell, so the rest can be
    /// smoothed from its last waypoint and patched in.
    #[test]
    fn leading_smoothing_is_a_walkable_prefix((grid, _) in grid_strategy(), sx in 0i32..14, sy in 0i32..14, gx in 0i32..14, gy in 0i32..14, radius in prop_oneof![Just(0.0f32), 0.05f32..0.45], lead in 1usize..20) {
        let start = Cell::new(sx % grid.width() as i32, sy % grid.height() as i32);
        let goal = Cell::new(gx % grid.width() as i32, gy % grid.height() as i32);
        if let Ok(p) = find_path(&grid, start, goal, &SearchConfig::default())
            && p.cells.len() > 1
        {
            let points = Smoother::leading(&grid, &p.cells, radius, lead).finish_in_steps(&grid, 1, || {});
            if lead >= p.cells.len() - 1 {
                // A path no longer than the lead is smoothed whole.
                prop_assert_eq!(points, smooth_path(&grid, &p.cells, radius));
                return Ok(());
            }
            let raw: Vec<Vec2> = p.cells.iter().map(|&c| grid.cell_center(c)).collect();
            prop_assert_eq!(points[0], raw[0]);
            let mut at = 0;
            for w in points.windows(2) {
                let next = raw[at + 1..].iter().position(|&r| r == w[1]).map(|i| at + 1 + i);
                prop_assert!(next.is_some(), "{:?} is no later cell center of the path", w[1]);
                let next = next.unwrap();
                prop_assert!(next == at + 1 || walkable(&grid, w[0], w[1], radius));
                at = next;
            }
            prop_assert!(at >= lead.min(p.cells.len() - 1), "stopped at cell {} of {}", at, p.cells.len());
        }
    }

    /// A late rest's smoothing: one forward pass over the whole path gives the waypoints of
    /// leading passes chained chunk after chunk (each from the last one's last waypoint), and
    /// ends at the goal, never longer than the path.
    #[test]
    fn a_forward_pass_is_the_leading_chunks_chained((grid, _) in grid_strategy(), sx in 0i32..14, sy in 0i32..14, gx in 0i32..14, gy in 0i32..14, radius in prop_oneof![Just(0.0f32), 0.05f32..0.45], chunk in 1usize..8) {
        let start = Cell::new(sx % grid.width() as i32, sy % grid.height() as i32);
        let goal = Cell::new(gx % grid.width() as i32, gy % grid.height() as i32);
        if let Ok(p) = find_path(&grid, start, goal, &SearchConfig::default())
            && p.cells.len() > 2
        {
            let forward = Smoother::forward(&grid, &p.cells, radius).finish_in_steps(&grid, 1, || {});
            prop_assert_eq!(forward[0], grid.cell_center(start));
            prop_assert_eq!(*forward.last().unwrap(), grid.cell_center(goal));
            let raw: Vec<Vec2> = p.cells.iter().map(|&c| grid.cell_center(c)).collect();
            prop_assert!(polyline_length(&forward) <= polyline_length(&raw) + 1e-4);
            let mut chained = vec![grid.cell_center(start)];
            let mut from = 0;
            while from + 1 < p.cells.len() {
                let part = &p.cells[from..];
                if part.len() <= chunk + 1 {
                    // A leading pass over a part no longer than its chunk smooths it whole.
                    break;
                }
                let points = Smoother::leading(&grid, part, radius, chunk).finish_in_steps(&grid, 1, || {});
                let last = *points.last().unwrap();
                chained.extend_from_slice(&points[1..]);
                from += part.iter().position(|&c| grid.cell_center(c) == last).unwrap();
            }
            if from + 1 >= p.cells.len() {
                prop_assert_eq!(forward, chained);
            } else {
                // The forward pass goes on where the chain stopped.
                let k = chained.len() - 1;
                prop_assert_eq!(&forward[..=k], &chained[..]);
            }
        }
    }
}

#[test]
fn corridor_steps_diagonally_through_corners() {
    let square = NavGrid::new(8, 8).unwrap();
    let c = |x, y| Cell::new(x, y);
    let diag = polyline_cells(&square, &[Vec2::new(0.5, 0.5), Vec2::new(3.5, 3.5)]);
    assert_eq!(diag, vec![c(0, 0), c(1, 1), c(2, 2), c(3, 3)]);
    let bent = polyline_cells(
        &square,
        &[
            Vec2::new(0.5, 0.5),
            Vec2::new(2.5, 0.5),
            Vec2::new(2.5, 2.5),
        ],
    );
    assert_eq!(bent, vec![c(0, 0), c(1, 0), c(2, 0), c(2, 1), c(2, 2)]);
    let shallow = polyline_cells(&square, &[Vec2::new(0.5, 0.5), Vec2::new(3.5, 1.5)]);
    // Crosses the lattice point (2, 1) exactly: one diagonal step there.
    assert_eq!(shallow, vec![c(0, 0), c(1, 0), c(2, 1), c(3, 1)]);
    let steep = polyline_cells(&square, &[Vec2::new(0.5, 0.5), Vec2::new(1.5, 3.0)]);
    assert_eq!(steep, vec![c(0, 0), c(0, 1), c(1, 1), c(1, 2), c(1, 3)]);
    assert_eq!(
        polyline_cells(&square, &[Vec2::new(4.2, 1.7)]),
        vec![c(4, 1)]
    );
}

#[test]
fn lester_road_beats_shorter_swamp() {
    // Straight across is swamp (cost 5); a detour one row down is road (cost 1), grass elsewhere 2.
    let w = 9;
    let mut terrain = vec![2u8; 9 * 3];
    for x in 1..8 {
        terrain[9 + x] = 5; // swamp row y = 1
        terrain[18 + x] = 1; // road row y = 2
    }
    let grid = NavGrid::from_terrain(w, 3, MoveRules::default(), &terrain).unwrap();
    let p = find_path(
        &grid,
        Cell::new(0, 1),
        Cell::new(8, 1),
        &SearchConfig::default(),
    )
    .unwrap();
    assert!(p.cells.iter().any(|c| c.y == 2), "took {:?}", p.cells);
    assert!(p.length > 8.0);
}

#[test]
fn bad_input_is_an_error() {
    let mut grid = NavGrid::new(4, 4).unwrap();
    grid.set_walkable(Cell::new(1, 1), false).unwrap();
    let cfg = SearchConfig::default();
    let o = Cell::new(0, 0);
    assert_eq!(
        find_path(&grid, Cell::new(-1, 0), o, &cfg),
        Err(PathError::StartOutOfBounds(Cell::new(-1, 0)))
    );
    assert_eq!(
        find_path(&grid, o, Cell::new(4, 0), &cfg),
        Err(PathError::GoalOutOfBounds(Cell::new(4, 0)))
    );
    assert_eq!(
        find_path(&grid, Cell::new(1, 1), o, &cfg),
        Err(PathError::StartBlocked(Cell::new(1, 1)))
    );
    assert_eq!(
        find_path(&grid, o, Cell::new(1, 1), &cfg),
        Err(PathError::GoalBlocked(Cell::new(1, 1)))
    );
    assert_eq!(find_nearest(&grid, o, &[], &cfg), Err(PathError::NoGoals));
    assert!(grid.set_walkable(Cell::new(9, 9), true).is_err());
    assert!(grid.terrain(Cell::new(0, -3)).is_err());
    assert!(NavGrid::new(0, 5).is_err());
    assert!(NavGrid::from_terrain(2, 2, MoveRules::default(), &[1, 1, 1]).is_err());
    let p = find_path(&grid, o, o, &cfg).unwrap();
    assert_eq!(p.cells, vec![o]);
    assert_eq!(p.cost, 0);
    let mut search = AStar::new();
    assert_eq!(
        search.step(&grid, 10),
        SearchStep::Failed(PathError::NotStarted)
    );
    assert!(!walkable(&grid, Vec2::new(f32::NAN, 0.0), Vec2::ZERO, 0.1));
}

#[test]
fn unreachable_goal_is_answered_without_searching_and_nearest_policy_redirects() {
    // A wall splits the grid in two.
    let mut grid = NavGrid::new(10, 10).unwrap();
    for y in 0..10 {
        grid.set_walkable(Cell::new(5, y), false).unwrap();
    }
    assert_eq!(grid.island_count(), 2);
    let mut search = AStar::new();
    let cfg = SearchConfig::default();
    assert_eq!(
        search.begin(&grid, Cell::new(0, 0), Cell::new(9, 9), &cfg),
        Err(PathError::Unreachable)
    );
    assert_eq!(search.expansions(), 0);
    let near = SearchConfig {
        goal_policy: GoalPolicy::NearestReachable,
        ..cfg
    };
    let p = find_path(&grid, Cell::new(0, 0), Cell::new(9, 3), &near).unwrap();
    assert_eq!(p.goal, Cell::new(4, 3));
    let p = find_path(&grid, Cell::new(0, 0), Cell::new(5, 7), &near).unwrap();
    assert_eq!(p.goal, Cell::new(4, 7));
    // Opening a door merges the islands.
    grid.set_walkable(Cell::new(5, 5), true).unwrap();
    assert_eq!(grid.island_count(), 1);
    assert!(find_path(&grid, Cell::new(0, 0), Cell::new(9, 9), &cfg).is_ok());
}

#[test]
fn limit_weight_and_overlay() {
    let grid = NavGrid::new(64, 64).unwrap();
    let cfg = SearchConfig {
        heuristic: Heuristic::Zero,
        max_expansions: Some(50),
        ..Default::default()
    };
    assert!(matches!(
        find_path(&grid, Cell::new(0, 0), Cell::new(63, 63), &cfg),
        Err(PathError::LimitExceeded { .. })
    ));
    let weighted = SearchConfig {
        weight: 2.0,
        ..Default::default()
    };
    let w = find_path(&grid, Cell::new(0, 0), Cell::new(63, 40), &weighted).unwrap();
    let o = find_path(
        &grid,
        Cell::new(0, 0),
        Cell::new(63, 40),
        &SearchConfig::default(),
    )
    .unwrap();
    assert!(w.length <= o.length * 2.0 && w.expansions <= o.expansions);
    // A blocked overlay row with one gap forces the path through the gap.
    let overlay: Vec<(Cell, CellOverlay)> = (0..64)
        .filter(|&x| x != 30)
        .map(|x| (Cell::new(x, 10), CellOverlay::Blocked))
        .collect();
    let mut search = AStar::new();
    search
        .begin_with_overlay(
            &grid,
            Cell::new(0, 0),
            Cell::new(0, 20),
            &SearchConfig::default(),
            &overlay,
        )
        .unwrap();
    let SearchStep::Found(p) = search.step(&grid, u32::MAX) else {
        panic!()
    };
    assert!(p.cells.contains(&Cell::new(30, 10)));
    assert!(
        grid.is_walkable(Cell::new(0, 10)),
        "overlays do not touch the grid"
    );
    // A goal walled in by an overlay (units standing round it): without a cost limit the search
    // expands every cell it can reach before it fails; with one it gives up near the goal.
    let big = NavGrid::new(256, 256).unwrap();
    let (start, goal) = (Cell::new(100, 100), Cell::new(103, 100));
    let ring: Vec<(Cell, CellOverlay)> = (-1..=1)
        .flat_map(|dy| (-1..=1).map(move |dx| goal + Cell::new(dx, dy)))
        .filter(|&c| c != goal)
        .map(|c| (c, CellOverlay::Blocked))
        .collect();
    let mut walled = |max_cost| {
        let config = SearchConfig {
            max_cost,
            ..Default::default()
        };
        search
            .begin_with_overlay(&big, start, goal, &config, &ring)
            .unwrap();
        match search.step(&big, u32::MAX) {
            SearchStep::Failed(e) => (e, search.expansions()),
            other => panic!("{other:?}"),
        }
    };
    let (flood, all) = walled(None);
    assert_eq!(flood, PathError::NoPath);
    assert!(all > 60_000, "{all}");
    // 2 x 3 + 40 tiles: cells within about 46 tiles of the two ends, not the map.
    let (bounded, few) = walled(Some(u64::from(big.rules().costs.from_tiles(46.0))));
    assert!(matches!(bounded, PathError::LimitExceeded { .. }));
    assert!(few < 8_000, "{few}");
    // Nearest-of searches take the overlay too: the nearer goal behind the row costs the detour
    // through the gap, so the farther one on this side wins.
    let goals = [Cell::new(0, 12), Cell::new(0, 8)];
    search
        .begin_nearest(&grid, Cell::new(0, 5), &goals, &SearchConfig::default())
        .unwrap();
    let SearchStep::Found(p) = search.step(&grid, u32::MAX) else {
        panic!()
    };
    assert_eq!(p.goal, Cell::new(0, 8));
    // A nearest-of search with an overlay keeps it when an edit restarts it mid-search: the
    // blocked row still stands between the start and the nearer goal.
    let mut edited = grid.clone();
    search
        .begin_nearest_with_overlay(
            &edited,
            Cell::new(0, 5),
            &[Cell::new(0, 12), Cell::new(63, 5)],
            &SearchConfig::default(),
            &overlay,
        )
        .unwrap();
    assert_eq!(search.step(&edited, 4), SearchStep::Pending);
    edited.set_walkable(Cell::new(40, 40), false).unwrap();
    let SearchStep::Found(p) = search.step(&edited, u32::MAX) else {
        panic!()
    };
    assert!(
        !p.cells.iter().any(|c| c.y == 10 && c.x != 30),
        "through the overlay's row: {:?}",
        p.cells
    );
    let goals = [Cell::new(0, 12), Cell::new(0, 1)];
    search
        .begin_nearest_with_overlay(
            &grid,
            Cell::new(0, 9),
            &goals,
            &SearchConfig::default(),
            &overlay,
        )
        .unwrap();
    let SearchStep::Found(p) = search.step(&grid, u32::MAX) else {
        panic!()
    };
    assert_eq!(
        p.goal,
        Cell::new(0, 1),
        "the goal behind the blocked row is dearer"
    );
    search
        .begin_nearest(&grid, Cell::new(0, 9), &goals, &SearchConfig::default())
        .unwrap();
    let SearchStep::Found(p) = search.step(&grid, u32::MAX) else {
        panic!()
    };
    assert_eq!(
        p.goal,
        Cell::new(0, 12),
        "without the overlay it is the nearer one"
    );
}

#[test]
fn search_restarts_when_the_grid_changes_mid_search() {
    let mut grid = NavGrid::new(30, 30).unwrap();
    let mut search = AStar::new();
    search
        .begin(
            &grid,
            Cell::new(0, 15),
            Cell::new(29, 15),
            &SearchConfig::default(),
        )
        .unwrap();
    assert_eq!(search.step(&grid, 3), SearchStep::Pending);
    for y in 0..29 {
        grid.set_walkable(Cell::new(15, y), false).unwrap();
    }
    let p = loop {
        match search.step(&grid, 10) {
            SearchStep::Pending => {}
            SearchStep::Found(p) => break p,
            SearchStep::Failed(e) => panic!("{e}"),
        }
    };
    assert!(p.cells.contains(&Cell::new(15, 29)));
    for w in p.cells.windows(2) {
        assert!(grid.can_step(w[0], w[1]));
    }
}

#[test]
fn a_searchs_expansions_stay_readable_after_it_ends() {
    // Budgets and frame statistics read `expansions()` after the slice that ends a search:
    // the count of the search just found, failed or cancelled, not 0.
    let mut grid = NavGrid::new(30, 30).unwrap();
    for y in 0..29 {
        grid.set_walkable(Cell::new(15, y), false).unwrap();
    }
    let mut search = AStar::new();
    for jump_points in [false, true] {
        let config = SearchConfig {
            jump_points,
            ..Default::default()
        };
        search
            .begin(&grid, Cell::new(0, 0), Cell::new(29, 0), &config)
            .unwrap();
        let SearchStep::Found(p) = search.step(&grid, u32::MAX) else {
            panic!("no path");
        };
        assert!(p.expansions > 0);
        assert_eq!(
            search.expansions(),
            p.expansions as u64,
            "jump points: {jump_points}"
        );
        // Of them, a jump point search's scanned cells (one expansion per 16); none for A*.
        let scans = search.scan_expansions();
        assert!(scans < search.expansions());
        assert_eq!(scans > 0, jump_points, "scans {scans}");
        assert!(!search.is_active());
        // A failed search (a wall closes the way) keeps its count too.
        let mut closed = grid.clone();
        closed.set_walkable(Cell::new(15, 29), false).unwrap();
        search
            .begin(&closed, Cell::new(0, 0), Cell::new(29, 0), &config)
            .unwrap_err();
        assert_eq!(
            search.expansions(),
            0,
            "a search refused at once expanded nothing"
        );
        search
            .begin(&grid, Cell::new(0, 0), Cell::new(29, 0), &config)
            .unwrap();
        assert_eq!(search.step(&grid, 5), SearchStep::Pending);
        let partial = search.expansions();
        assert!(partial > 0);
        search.cancel();
        assert_eq!(search.expansions(), partial);
    }
}

#[test]
fn manhattan_is_lesters_inadmissible_heuristic() {
    assert!(!Heuristic::Manhattan.is_admissible(true));
    assert!(Heuristic::Manhattan.is_admissible(false));
    let grid = NavGrid::new(20, 20).unwrap();
    let m = SearchConfig {
        heuristic: Heuristic::Manhattan,
        ..Default::default()
    };
    let p = find_path(&grid, Cell::new(0, 0), Cell::new(19, 7), &m).unwrap();
    let o = find_path(
        &grid,
        Cell::new(0, 0),
        Cell::new(19, 7),
        &SearchConfig::default(),
    )
    .unwrap();
    assert!(p.length >= o.length && p.expansions <= o.expansions);
}

#[test]
fn turn_penalty_trades_length_for_fewer_turns() {
    let mut grid = NavGrid::new(30, 30).unwrap();
    for y in 5..25 {
        grid.set_walkable(Cell::new(15, y), false).unwrap();
    }
    let plain = find_path(
        &grid,
        Cell::new(2, 12),
        Cell::new(28, 17),
        &SearchConfig::default(),
    )
    .unwrap();
    let cfg = SearchConfig {
        turn_penalty: 3 * 65536,
        ..Default::default()
    };
    let turny = find_path(&grid, Cell::new(2, 12), Cell::new(28, 17), &cfg).unwrap();
    assert!(
        turny.turns() < plain.turns(),
        "{} vs {}",
        turny.turns(),
        plain.turns()
    );
    assert!(turny.length >= plain.length);
    for w in turny.cells.windows(2) {
        assert!(grid.can_step(w[0], w[1]));
    }
}

fn walls_strategy() -> impl Strategy<Value = NavGrid> {
    (8u32..40, 8u32..40, rules_strategy()).prop_flat_map(|(w, h, rules)| {
        proptest::collection::vec(
            prop_oneof![3 => Just(0u8), 8 => Just(1u8), 1 => 2u8..6],
            (w * h) as usize,
        )
        .prop_map(move |terrain| NavGrid::from_terrain(w, h, rules, &terrain).unwrap())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Hierarchical search finds a path exactly when a flat search does (it falls back to one
    /// when the region map has no route), the path is legal, ends where asked, and is never
    /// cheaper than the optimum.
    #[test]
    fn hierarchical_is_complete_and_legal(grid in walls_strategy(), cluster in 4u32..9, sx in 0i32..40, sy in 0i32..40, gx in 0i32..40, gy in 0i32..40) {
        let start = Cell::new(sx % grid.width() as i32, sy % grid.height() as i32);
        let goal = Cell::new(gx % grid.width() as i32, gy % grid.height() as i32);
        let regions = RegionMap::build(&grid, cluster);
        let config = SearchConfig::default();
        let flat = find_path(&grid, start, goal, &config);
        let hier = find_path_hierarchical(&grid, &regions, start, goal, &config);
        match (&flat, &hier) {
            (Ok(f), Ok(h)) => {
                prop_assert_eq!(h.cells.first(), Some(&start));
                prop_assert_eq!(h.cells.last(), Some(&f.goal));
                prop_assert!(h.cells.windows(2).all(|w| grid.can_step(w[0], w[1])));
                prop_assert!(h.cost >= f.cost);
                let summed: u64 = h.cells.windows(2).map(|w| rule_step(&grid, w[0], w[1]).unwrap()).sum();
                prop_assert_eq!(summed, h.cost);
                prop_assert!((h.length - grid.cells_length(&h.cells)).abs() < 1e-9);
            }
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            _ => prop_assert!(false, "flat {:?} vs hierarchical {:?}", flat.as_ref().map(|p| p.cost), hier.as_ref().map(|p| p.cost)),
        }
    }

    /// Stepped a few expansions at a time, a hierarchical search finds the path it finds in one
    /// go; with an overlay, its path is legal and costs what its steps cost under the overlay.
    #[test]
    fn hierarchical_resumes_in_slices(grid in walls_strategy(), cluster in 4u32..9, sx in 0i32..40, sy in 0i32..40, gx in 0i32..40, gy in 0i32..40, slice in 1u32..64, claimed in prop::collection::vec((0i32..40, 0i32..40, 0u32..200_000), 0..20)) {
        let start = Cell::new(sx % grid.width() as i32, sy % grid.height() as i32);
        let goal = Cell::new(gx % grid.width() as i32, gy % grid.height() as i32);
        let regions = RegionMap::build(&grid, cluster);
        let config = SearchConfig::default();
        let whole = find_path_hierarchical(&grid, &regions, start, goal, &config);
        let mut search = AStar::new();
        let overlay: Vec<(Cell, CellOverlay)> = claimed
            .iter()
            .map(|&(x, y, p)| (Cell::new(x % grid.width() as i32, y % grid.height() as i32), CellOverlay::Penalty(p)))
            .collect();
        for overlay in [&[][..], &overlay[..]] {
            let Some(mut h) = HierarchicalSearch::begin_with_overlay(&grid, &regions, start, goal, &config, overlay).unwrap_or(None) else {
                continue;
            };
            let mut steps = 0;
            let path = loop {
                steps += 1;
                prop_assert!(steps < 1_000_000);
                match h.step(&grid, &mut search, slice) {
                    SearchStep::Pending => {}
                    SearchStep::Found(p) => break p,
                    SearchStep::Failed(e) => return Err(TestCaseError::fail(format!("{e:?}"))),
                }
            };
            prop_assert!(path.cells.windows(2).all(|w| grid.can_step(w[0], w[1])));
            prop_assert_eq!(path.expansions as u64, h.expansions());
            if overlay.is_empty() {
                let whole = whole.as_ref().expect("found in one go too");
                prop_assert_eq!(&path.cells, &whole.cells);
                prop_assert_eq!(path.cost, whole.cost);
            } else {
                // The highest penalty of a cell listed twice; none on the goal.
                let extra = |c: Cell| if c == *path.cells.last().unwrap() { 0 } else {
                    overlay.iter().filter(|(o, _)| *o == c).map(|(_, o)| match o {
                        CellOverlay::Penalty(p) => *p as u64,
                        CellOverlay::Blocked => 0,
                    }).max().unwrap_or(0)
                };
                let summed: u64 = path.cells.windows(2).map(|w| rule_step(&grid, w[0], w[1]).unwrap() + extra(w[1])).sum();
                prop_assert_eq!(summed, path.cost);
            }
        }
    }
}

proptest! {
    /// A region map brought up to date after edits, cluster by cluster, is the map built afresh
    /// on the edited grid: the same links at the same costs.
    #[test]
    fn region_map_updates_match_a_rebuild(grid in walls_strategy(), cluster in 4u32..9, edits in prop::collection::vec((0i32..40, 0i32..40, 0u8..4), 1..12), batches in 1usize..4) {
        let mut grid = grid;
        let mut regions = RegionMap::build(&grid, cluster);
        for batch in edits.chunks(edits.len().div_ceil(batches)) {
            let mut changed = Vec::new();
            for &(x, y, kind) in batch {
                let cell = Cell::new(x % grid.width() as i32, y % grid.height() as i32);
                match kind {
                    0 => grid.set_walkable(cell, false).unwrap(),
                    1 => grid.set_walkable(cell, true).unwrap(),
                    t => grid.set_terrain(cell, t * 3).unwrap(),
                }
                changed.push(cell);
            }
            regions.update(&grid, changed);
            prop_assert!(regions.is_current(&grid));
            let fresh = RegionMap::build(&grid, cluster);
            prop_assert_eq!(regions.node_count(), fresh.node_count());
            prop_assert_eq!(regions.links(), fresh.links());
        }
    }
}

#[test]
fn a_stale_region_map_gives_no_path() {
    let mut grid = NavGrid::new(64, 64).unwrap();
    let regions = RegionMap::build(&grid, 16);
    assert!(regions.is_current(&grid));
    let (a, b) = (Cell::new(1, 1), Cell::new(62, 62));
    assert!(find_path_hierarchical(&grid, &regions, a, b, &SearchConfig::default()).is_ok());
    grid.set_walkable(Cell::new(30, 30), false).unwrap();
    assert!(!regions.is_current(&grid));
    assert_eq!(
        find_path_hierarchical(&grid, &regions, a, b, &SearchConfig::default()),
        Err(PathError::NoPath)
    );
    let rebuilt = RegionMap::build(&grid, 16);
    let p = find_path_hierarchical(&grid, &rebuilt, a, b, &SearchConfig::default()).unwrap();
    assert!(!p.cells.contains(&Cell::new(30, 30)));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    /// Shared searches: every start's path read off one backward tree costs exactly what its own
    /// A* costs under the same grid and overlay, is legal step by step and adds up to that cost;
    /// starts added after the tree has grown (a later order to the same goal) too.
    #[test]
    fn goal_tree_paths_equal_own_astar(
        (grid, _) in grid_strategy(),
        goal in (0i32..14, 0i32..14),
        starts in proptest::collection::vec((0i32..14, 0i32..14), 1..8),
        later in proptest::collection::vec((0i32..14, 0i32..14), 0..4),
        overlay in proptest::collection::vec((0i32..14, 0i32..14, prop_oneof![Just(None), (1u32..200_000).prop_map(Some)]), 0..6),
        slice in prop_oneof![Just(1u32), 1u32..40, Just(u32::MAX)],
    ) {
        let (w, h) = (grid.width() as i32, grid.height() as i32);
        let cell = |(x, y): (i32, i32)| Cell::new(x % w, y % h);
        let goal = cell(goal);
        prop_assume!(grid.is_walkable(goal));
        let overlay: Vec<(Cell, CellOverlay)> = overlay
            .iter()
            .map(|&(x, y, p)| (cell((x, y)), p.map_or(CellOverlay::Blocked, CellOverlay::Penalty)))
            .collect();
        let mut tree = GoalTree::new();
        tree.begin(&grid, goal, &overlay, Heuristic::Octile).unwrap();
        let starts: Vec<Cell> = starts.into_iter().map(cell).collect();
        let later: Vec<Cell> = later.into_iter().map(cell).collect();
        let mut without_path = 0;
        for batch in [&starts, &later] {
            tree.add_starts(&grid, batch);
            let mut rounds = 0;
            while tree.step(&grid, slice) == TreeStep::Pending {
                rounds += 1;
                prop_assert!(rounds < 100_000);
            }
            for &s in batch.iter() {
                let mut own = AStar::new();
                let own = own
                    .begin_with_overlay(&grid, s, goal, &SearchConfig::default(), &overlay)
                    .and_then(|()| own.finish(&grid));
                match (tree.path_from(&grid, s), own) {
                    (Some(p), Ok(o)) => {
                        prop_assert_eq!(p.cost, o.cost, "from {:?}", s);
                        prop_assert_eq!(p.cells[0], s);
                        prop_assert_eq!(*p.cells.last().unwrap(), goal);
                        for step in p.cells.windows(2) {
                            prop_assert!(grid.can_step(step[0], step[1]));
                        }
                    }
                    (None, Err(_)) => without_path += 1,
                    (p, o) => prop_assert!(false, "tree {:?} vs own {:?} from {:?}", p, o, s),
                }
            }
        }
        // Only starts without a path (under the overlay) are left unsettled.
        prop_assert!(tree.unsettled() <= without_path);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 800, ..ProptestConfig::default() })]

    /// A tree that follows edits made while it grows (or after): every path it still gives is
    /// legal on the grid as it is now, ends at the goal, and its cost is what its steps cost
    /// now, never less than the start's own A* on the edited grid; starts whose paths no edit
    /// touched keep exactly the path the tree had for them.
    #[test]
    fn goal_tree_following_edits_gives_legal_paths_costed_now(
        (grid, _) in grid_strategy(),
        goal in (0i32..14, 0i32..14),
        starts in proptest::collection::vec((0i32..14, 0i32..14), 1..8),
        edits in proptest::collection::vec((0i32..14, 0i32..14, 0u8..6), 1..6),
        before in 0u32..60,
    ) {
        let mut grid = grid;
        let (w, h) = (grid.width() as i32, grid.height() as i32);
        let cell = |(x, y): (i32, i32)| Cell::new(x % w, y % h);
        let goal = cell(goal);
        prop_assume!(grid.is_walkable(goal));
        let starts: Vec<Cell> = starts.into_iter().map(cell).collect();
        let mut tree = GoalTree::new();
        tree.begin(&grid, goal, &[], Heuristic::Octile).unwrap();
        tree.add_starts(&grid, &starts);
        tree.step(&grid, before);
        let old: Vec<Option<Vec<Cell>>> = starts
            .iter()
            .map(|&s| tree.path_from(&grid, s).map(|p| p.cells))
            .collect();
        let version = grid.version();
        let mut edited = Vec::new();
        for &(x, y, t) in &edits {
            let c = cell((x, y));
            if c == goal {
                continue;
            }
            grid.set_terrain(c, t).unwrap();
            edited.push(c);
        }
        prop_assert!(tree.follow_edits(&grid));
        prop_assert_eq!(tree.edited(), grid.version() != version);
        let mut rounds = 0;
        while tree.step(&grid, 7) == TreeStep::Pending {
            rounds += 1;
            prop_assert!(rounds < 100_000);
        }
        for (k, &s) in starts.iter().enumerate() {
            let Some(p) = tree.path_from(&grid, s) else {
                continue;
            };
            prop_assert_eq!(p.cells[0], s);
            prop_assert_eq!(*p.cells.last().unwrap(), goal);
            let mut cost = 0;
            for step in p.cells.windows(2) {
                let c = rule_step(&grid, step[0], step[1]);
                prop_assert!(c.is_some(), "illegal step {:?} from {:?}", step, s);
                cost += c.unwrap();
            }
            prop_assert_eq!(p.cost, cost);
            prop_assert_eq!(tree.cost_from(&grid, s), Some(cost));
            let own = find_path(&grid, s, goal, &SearchConfig::default());
            prop_assert!(own.as_ref().is_ok_and(|o| o.cost <= cost), "own {:?}", own);
            if let Some(old) = &old[k]
                && !old.iter().any(|c| edited.iter().any(|e| (*e - *c).x.abs() <= 1 && (*e - *c).y.abs() <= 1))
            {
                prop_assert_eq!(&p.cells, old);
            }
        }
    }
}

/// A corridor one cell wide that snakes over a 64 x 64 grid (some 2,000 cells) and closes into
/// a loop: blocking one of its cells leaves its two sides connected only the long way round
/// (farther than the local search for a way round looks), and blocking a second splits it.
#[test]
fn islands_follow_blocks_whose_way_round_is_long_or_missing() {
    let n = 64;
    let mut grid = NavGrid::new(n, n).unwrap();
    for c in grid.cells().collect::<Vec<_>>() {
        grid.set_walkable(c, false).unwrap();
    }
    let n = n as i32;
    // Rows 1, 3, .. 61 from x = 1 to 61, joined at alternate ends; column 63 back to the start.
    for y in (1..n - 2).step_by(2) {
        for x in 1..n - 2 {
            grid.set_walkable(Cell::new(x, y), true).unwrap();
        }
        if y + 2 < n - 2 {
            let x = if (y / 2) % 2 == 0 { n - 3 } else { 1 };
            grid.set_walkable(Cell::new(x, y + 1), true).unwrap();
        }
    }
    let last = (n - 3) | 1;
    let end_x = if ((last - 1) / 2) % 2 == 0 { n - 3 } else { 1 };
    for x in end_x.min(n - 1)..n {
        grid.set_walkable(Cell::new(x, last), true).unwrap();
    }
    for y in 0..=last {
        grid.set_walkable(Cell::new(n - 1, y), true).unwrap();
    }
    for x in 1..n {
        grid.set_walkable(Cell::new(x, 0), true).unwrap();
    }
    grid.set_walkable(Cell::new(1, 1), true).unwrap();
    assert_eq!(grid.island_count(), 1);
    let (left, right) = (Cell::new(29, 31), Cell::new(31, 31));
    assert!(grid.connected(left, right));
    // The loop is cut once: one island still, the long way round.
    grid.set_walkable(Cell::new(30, 31), false).unwrap();
    assert_eq!(grid.island_count(), 1);
    assert!(grid.connected(left, right));
    // Cut twice: two islands.
    grid.set_walkable(Cell::new(30, 33), false).unwrap();
    assert_eq!(grid.island_count(), 2);
    let fresh = NavGrid::from_terrain(
        grid.width(),
        grid.height(),
        grid.rules(),
        &grid
            .cells()
            .map(|c| grid.terrain(c).unwrap())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    for a in [left, right, Cell::new(30, 35), Cell::new(1, 1)] {
        for b in [left, right, Cell::new(30, 35), Cell::new(1, 1)] {
            assert_eq!(grid.connected(a, b), fresh.connected(a, b), "{a:?} {b:?}");
        }
    }
}

#[test]
fn goal_tree_follows_an_edit_and_drops_only_the_paths_it_broke() {
    let mut grid = NavGrid::new(10, 10).unwrap();
    // A wall with one gap at (5, 8): the start below the wall goes through the gap.
    for y in 0..8 {
        grid.set_walkable(Cell::new(5, y), false).unwrap();
    }
    let goal = Cell::new(9, 0);
    let (through_gap, beside_goal) = (Cell::new(0, 0), Cell::new(8, 3));
    let mut tree = GoalTree::new();
    tree.begin(&grid, goal, &[], Heuristic::Octile).unwrap();
    tree.add_starts(&grid, &[through_gap, beside_goal]);
    assert_eq!(tree.step(&grid, u32::MAX), TreeStep::Done);
    let near = tree.path_from(&grid, beside_goal).unwrap();
    assert!(tree.path_from(&grid, through_gap).is_some());
    // The gap closes: the tree follows the edit instead of going stale.
    grid.set_walkable(Cell::new(5, 8), false).unwrap();
    assert!(tree.path_from(&grid, through_gap).is_none());
    assert!(tree.follow_edits(&grid));
    assert!(tree.edited());
    assert_eq!(tree.step(&grid, u32::MAX), TreeStep::Done);
    // The path through the closed gap is refused; the one the edit did not touch stays.
    assert!(tree.path_from(&grid, through_gap).is_none());
    assert_eq!(tree.path_from(&grid, beside_goal), Some(near));
    // A tree cannot follow a change of the move rules.
    let mut rules = grid.rules();
    rules.corner_rule = match rules.corner_rule {
        CornerRule::NoCutting => CornerRule::AllowCutting,
        CornerRule::AllowCutting => CornerRule::NoCutting,
    };
    grid.set_rules(rules);
    assert!(!tree.follow_edits(&grid));
}

#[test]
fn goal_tree_goes_stale_with_the_grid() {
    let mut grid = NavGrid::new(10, 10).unwrap();
    let mut tree = GoalTree::new();
    tree.begin(&grid, Cell::new(9, 9), &[], Heuristic::Octile)
        .unwrap();
    tree.add_starts(&grid, &[Cell::new(0, 0)]);
    assert_eq!(tree.step(&grid, u32::MAX), TreeStep::Done);
    assert!(tree.path_from(&grid, Cell::new(0, 0)).is_some());
    grid.set_walkable(Cell::new(5, 5), false).unwrap();
    assert_eq!(tree.step(&grid, u32::MAX), TreeStep::Stale);
    assert!(tree.path_from(&grid, Cell::new(0, 0)).is_none());
    assert_eq!(
        tree.begin(&grid, Cell::new(5, 5), &[], Heuristic::Octile),
        Err(PathError::GoalBlocked(Cell::new(5, 5)))
    );
    assert_eq!(
        tree.begin(&grid, Cell::new(50, 5), &[], Heuristic::Octile),
        Err(PathError::GoalOutOfBounds(Cell::new(50, 5)))
    );
}

/// Reference for hexagonal grids: breadth-first steps over the six axial neighbours, written
/// from the definition (not through `NavGrid::can_step`).
fn hex_bfs_steps(grid: &NavGrid, start: Cell) -> Vec<Option<u32>> {
    const SIX: [(i32, i32); 6] = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, -1), (-1, 1)];
    let w = grid.width() as i32;
    let idx = |c: Cell| (c.y * w + c.x) as usize;
    let mut steps = vec![None; (grid.width() * grid.height()) as usize];
    let mut queue = std::collections::VecDeque::from([start]);
    steps[idx(start)] = Some(0);
    while let Some(c) = queue.pop_front() {
        let d = steps[idx(c)].unwrap();
        for (dx, dy) in SIX {
            let n = c + Cell::new(dx, dy);
            if grid.is_walkable(n) && steps[idx(n)].is_none() {
                steps[idx(n)] = Some(d + 1);
                queue.push_back(n);
            }
        }
    }
    steps
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// On random hexagonal grids (plain ground and walls), A*'s paths are as many steps as a
    /// breadth-first search's, every step is to one of the six neighbours, the length counts one
    /// per step, and islands agree.
    #[test]
    fn hex_astar_lengths_equal_breadth_first(
        w in 2u32..20,
        h in 2u32..20,
        seed in proptest::collection::vec(prop_oneof![3 => Just(0u8), 7 => Just(1u8)], 400),
        ends in (0i32..20, 0i32..20, 0i32..20, 0i32..20),
    ) {
        let rules = MoveRules { topology: Topology::Hex, ..Default::default() };
        let terrain: Vec<u8> = seed.iter().copied().cycle().take((w * h) as usize).collect();
        let mut grid = NavGrid::from_terrain(w, h, rules, &terrain).unwrap();
        let start = Cell::new(ends.0 % w as i32, ends.1 % h as i32);
        let goal = Cell::new(ends.2 % w as i32, ends.3 % h as i32);
        grid.set_walkable(start, true).unwrap();
        grid.set_walkable(goal, true).unwrap();
        let reference = hex_bfs_steps(&grid, start)[(goal.y * w as i32 + goal.x) as usize];
        prop_assert_eq!(grid.connected(start, goal), reference.is_some());
        match (find_path(&grid, start, goal, &SearchConfig::default()), reference) {
            (Ok(p), Some(steps)) => {
                prop_assert_eq!(p.cells.len() as u32 - 1, steps);
                prop_assert_eq!(p.length, steps as f64);
                for s in p.cells.windows(2) {
                    let d = s[1] - s[0];
                    prop_assert!(d.abs().max_element() == 1 && d.x != d.y, "{:?}", p.cells);
                    prop_assert!(grid.is_walkable(s[1]));
                }
            }
            (Err(PathError::Unreachable), None) => {}
            (r, c) => prop_assert!(false, "search {:?} vs breadth-first {:?}", r, c),
        }
    }
}

#[test]
fn hex_cells_and_world_geometry() {
    let rules = MoveRules {
        topology: Topology::Hex,
        ..Default::default()
    };
    let mut grid = NavGrid::with_rules(10, 10, rules).unwrap();
    // Neighbouring centres are one unit apart in every direction.
    let c = Cell::new(4, 4);
    for &s in grid.connecting_steps() {
        let d = grid.cell_center(c + s).distance(grid.cell_center(c));
        assert!((d - 1.0).abs() < 1e-5);
        assert!(grid.can_step(c, c + s));
    }
    assert!(!grid.can_step(c, c + Cell::new(1, 1)));
    assert!(!grid.can_step(c, c + Cell::new(-1, -1)));
    // A straight line of hexes: the path is 6 steps, length 6.
    let p = find_path(
        &grid,
        Cell::new(1, 4),
        Cell::new(7, 4),
        &SearchConfig::default(),
    )
    .unwrap();
    assert_eq!(p.length, 6.0);
    // Islands: a ring of walls around (4, 4) cuts it off, through the (1, -1) diagonals too.
    for &s in grid.connecting_steps() {
        grid.set_walkable(c + s, false).unwrap();
    }
    assert!(!grid.connected(c, Cell::new(0, 0)));
    assert_eq!(
        find_path(&grid, c, Cell::new(0, 0), &SearchConfig::default()),
        Err(PathError::Unreachable)
    );
    grid.set_walkable(c + Cell::new(1, -1), true).unwrap();
    assert!(grid.connected(c, Cell::new(0, 0)));
}

/// Larger eight-way grids without corner cutting, mostly plain ground: walls, some dearer and
/// cheaper terrain, a few penalties.
fn open_grid_strategy() -> impl Strategy<Value = NavGrid> {
    (8u32..40, 8u32..40, any::<bool>()).prop_flat_map(|(w, h, varied)| {
        let n = (w * h) as usize;
        let terrain = if varied {
            prop_oneof![12 => Just(1u8), 3 => Just(0u8), 1 => 2u8..5, 1 => Just(20u8)].boxed()
        } else {
            prop_oneof![5 => Just(1u8), 1 => Just(0u8)].boxed()
        };
        (
            proptest::collection::vec(terrain, n),
            proptest::collection::vec(prop_oneof![30 => Just(0u32), 1 => 1u32..200_000], n),
        )
            .prop_map(move |(terrain, penalties)| {
                let rules = MoveRules {
                    topology: Topology::Eight,
                    corner_rule: CornerRule::NoCutting,
                    costs: CostModel::EXACT,
                };
                let mut g = NavGrid::from_terrain(w, h, rules, &terrain).unwrap();
                if varied {
                    for (i, &p) in penalties.iter().enumerate() {
                        let c = Cell::new(i as i32 % w as i32, i as i32 / w as i32);
                        g.set_penalty(c, p).unwrap();
                    }
                }
                g
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    /// Jump point search costs what A* costs, with and without an overlay of other units'
    /// claims (penalties) and stopped units (blocks), and its cells are a legal path.
    #[test]
    fn jump_point_search_costs_what_astar_costs(
        grid in open_grid_strategy(),
        ends in (0i32..40, 0i32..40, 0i32..40, 0i32..40),
        overlay in proptest::collection::vec((0i32..40, 0i32..40, 0u32..300_000), 0..12),
        edits in proptest::collection::vec((0i32..40, 0i32..40), 0..8),
    ) {
        let (w, h) = (grid.width() as i32, grid.height() as i32);
        // The same grid with a jump table (JPS+), built before some cells are toggled (the
        // table follows the edits), and the plain grid given the same edits.
        let mut grid = grid;
        let mut tabled = grid.clone();
        tabled.build_jump_table();
        for &(x, y) in &edits {
            let c = Cell::new(x % w, y % h);
            let open = grid.is_walkable(c);
            grid.set_walkable(c, !open).unwrap();
            tabled.set_walkable(c, !open).unwrap();
        }
        let grid = grid;
        let start = Cell::new(ends.0 % w, ends.1 % h);
        let goal = Cell::new(ends.2 % w, ends.3 % h);
        let overlay: Vec<(Cell, CellOverlay)> = overlay
            .iter()
            .map(|&(x, y, p)| {
                let o = if p < 50_000 { CellOverlay::Blocked } else { CellOverlay::Penalty(p) };
                (Cell::new(x % w, y % h), o)
            })
            .collect();
        for overlay in [&[][..], &overlay[..]] {
            let mut astar = AStar::new();
            let mut jps = AStar::new();
            let plain = SearchConfig::default();
            let jumping = SearchConfig { jump_points: true, ..plain };
            let mut jps_table = AStar::new();
            let a = astar.begin_with_overlay(&grid, start, goal, &plain, overlay);
            let j = jps.begin_with_overlay(&grid, start, goal, &jumping, overlay);
            let t = jps_table.begin_with_overlay(&tabled, start, goal, &jumping, overlay);
            prop_assert_eq!(a.is_ok(), j.is_ok());
            prop_assert_eq!(a.is_ok(), t.is_ok());
            if a.is_err() {
                continue;
            }
            let finish = |s: &mut AStar, grid: &NavGrid| loop {
                // Small slices: resuming mid-search changes nothing.
                match s.step(grid, 3) {
                    SearchStep::Pending => continue,
                    SearchStep::Found(p) => break Ok(p),
                    SearchStep::Failed(e) => break Err(e),
                }
            };
            let read = finish(&mut jps_table, &tabled);
            let (a, j) = (finish(&mut astar, &grid), finish(&mut jps, &grid));
            // Reading the table finds the jump points scanning finds: the same path.
            match (&j, &read) {
                (Ok(j), Ok(t)) => prop_assert_eq!(&j.cells, &t.cells),
                (Err(j), Err(t)) => prop_assert_eq!(j, t),
                (j, t) => prop_assert!(false, "scanned {:?} against the table {:?}", j, t),
            }
            match (a, j) {
                (Ok(a), Ok(j)) => {
                    prop_assert_eq!(a.cost, j.cost);
                    prop_assert_eq!(j.cells[0], start);
                    prop_assert_eq!(*j.cells.last().unwrap(), goal);
                    for s in j.cells.windows(2) {
                        prop_assert!(rule_step(&grid, s[0], s[1]).is_some(), "illegal step {:?}", s);
                    }
                }
                (Err(a), Err(j)) => prop_assert_eq!(a, j),
                (a, j) => prop_assert!(false, "A* {:?} against jump points {:?}", a, j),
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// A nearest-of-several search by jump points reaches a goal as cheap as Dijkstra's.
    #[test]
    fn jump_point_nearest_costs_what_dijkstra_costs(
        grid in open_grid_strategy(),
        start in (0i32..40, 0i32..40),
        goals in proptest::collection::vec((0i32..40, 0i32..40), 1..6),
    ) {
        let (w, h) = (grid.width() as i32, grid.height() as i32);
        let start = Cell::new(start.0 % w, start.1 % h);
        prop_assume!(grid.is_walkable(start));
        let goals: Vec<Cell> = goals.iter().map(|&(x, y)| Cell::new(x % w, y % h)).collect();
        let plain = SearchConfig::default();
        let jumping = SearchConfig { jump_points: true, ..plain };
        let mut jps = AStar::new();
        let ran = jps.begin_nearest(&grid, start, &goals, &jumping).map(|()| loop {
            match jps.step(&grid, 3) {
                SearchStep::Pending => continue,
                SearchStep::Found(p) => break Ok(p),
                SearchStep::Failed(e) => break Err(e),
            }
        });
        let used = jps.used_jump_points();
        match (find_nearest(&grid, start, &goals, &plain), ran) {
            (Ok(a), Ok(Ok(j))) => {
                prop_assert_eq!(a.cost, j.cost);
                prop_assert_eq!(goals[j.goal_index.unwrap()], j.goal);
                prop_assert_eq!(*j.cells.last().unwrap(), j.goal);
                for s in j.cells.windows(2) {
                    prop_assert!(rule_step(&grid, s[0], s[1]).is_some(), "illegal step {:?}", s);
                }
                // On grids of one terrain it was a jump point search.
                prop_assert_eq!(used, grid.jump_points_apply());
            }
            (Err(a), Err(j)) | (Err(a), Ok(Err(j))) => prop_assert_eq!(a, j),
            (a, j) => prop_assert!(false, "Dijkstra {:?} against jump points {:?}", a, j),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    /// Lanes beside any path, on any topology and move rules: every walk, whole or joined from
    /// where a unit stands, is a walk the rules allow (neighbours, walkable, never a cell `ok`
    /// refuses), starts where the unit stands, and costs what its steps cost.
    #[test]
    fn lanes_are_legal_walks(
        (grid, _) in grid_strategy(),
        s in any::<u32>(),
        g in any::<u32>(),
        laterals in proptest::collection::vec(-4i32..=4, 1..6),
        refused in any::<u32>(),
        from in any::<u32>(),
    ) {
        let cells: Vec<Cell> = grid.cells().filter(|&c| grid.is_walkable(c)).collect();
        prop_assume!(cells.len() >= 2);
        let (start, goal) = (cells[s as usize % cells.len()], cells[g as usize % cells.len()]);
        let Ok(path) = find_path(&grid, start, goal, &SearchConfig::default()) else {
            return Ok(());
        };
        let refused = cells[refused as usize % cells.len()];
        let ok = |c: Cell| c != refused || c == start;
        let laterals: Vec<f32> = laterals.iter().map(|&l| l as f32).collect();
        let spread = laterals.iter().fold(0.0f32, |m, l| m.max(l.abs()));
        let guide = Lanes::new(&grid, &path.cells, spread);
        let legal = |walk: &[Cell]| {
            walk.iter().all(|&c| grid.is_walkable(c))
                && walk.windows(2).all(|w| grid.can_step(w[0], w[1]) && ok(w[1]))
        };
        let last = guide.len() - 1;
        let from = from as usize % guide.len();
        for lane in Lane::spread(&laterals) {
            if let Some(walk) = guide.walk(&grid, start, lane, (from, last), ok) {
                prop_assert_eq!(walk[0], start);
                prop_assert!(legal(&walk), "{:?}", walk);
            }
            if let Some(walked) = guide.walk_lane(&grid, lane, ok)
                && let Some((walk, cost)) = walked.join(&grid, start, (from, last), ok)
            {
                prop_assert_eq!(walk[0], start);
                prop_assert!(legal(&walk), "{:?}", walk);
                let steps: Option<u64> = walk.windows(2).map(|w| rule_step(&grid, w[0], w[1])).sum();
                prop_assert_eq!(Some(cost), steps);
            }
        }
    }
}
