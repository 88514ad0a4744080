//! Unit classes in the core: terrain costs per class, clearance for wide units, and the class
//! grids kept up to date under edits.

mod support;

use bevy::math::{IVec2, Vec2};
use bevy_tilepath::core::*;
use proptest::prelude::*;

const GRASS: u8 = 1;
const FOREST: u8 = 3;
const ROAD: u8 = 2;
const WATER: u8 = 9;

fn vehicle() -> TerrainCosts {
    TerrainCosts::identity()
        .blocking(FOREST)
        .blocking(WATER)
        .with_cost(ROAD, 1)
        .with_cost(GRASS, 2)
}

/// The clearance of `c` by its definition: rings of free cells around it (outside blocked).
fn clearance_by_definition(grid: &NavGrid, costs: &TerrainCosts, c: Cell) -> u8 {
    let free = |c: Cell| grid.terrain(c).is_ok_and(|k| costs.cost(k) != BLOCKED);
    (0..MAX_CLEARANCE as i32)
        .find(|&r| (-r..=r).any(|dy| (-r..=r).any(|dx| !free(c + IVec2::new(dx, dy)))))
        .map_or(MAX_CLEARANCE, |r| r as u8)
}

#[test]
fn the_default_class_is_the_grid_itself() {
    let mut terrain = vec![GRASS; 16 * 16];
    for (i, t) in terrain.iter_mut().enumerate() {
        *t = [GRASS, FOREST, ROAD, BLOCKED][(i * 7 + i / 5) % 4];
    }
    let grid = NavGrid::from_terrain(16, 16, MoveRules::default(), &terrain).unwrap();
    let class = ClassGrid::new(&grid, MoveClass::default()).unwrap();
    assert!(class.class().is_default());
    for c in grid.cells() {
        assert_eq!(class.grid().terrain(c), grid.terrain(c));
        assert_eq!(
            class.grid().island(c).is_some(),
            grid.island(c).is_some(),
            "{c}"
        );
    }
    assert_eq!(class.grid().island_count(), grid.island_count());
    let cfg = SearchConfig::default();
    for (a, b) in [((0, 0), (15, 15)), ((3, 14), (12, 1)), ((0, 8), (15, 8))] {
        let (a, b) = (Cell::new(a.0, a.1), Cell::new(b.0, b.1));
        assert_eq!(
            find_path(&grid, a, b, &cfg).map(|p| p.cost),
            find_path(class.grid(), a, b, &cfg).map(|p| p.cost)
        );
    }
}

#[test]
fn a_vehicle_goes_round_the_forest_infantry_crosses() {
    // A forest band across the middle with a road round it: infantry (the default class: forest
    // costs 3) cuts through; vehicles (forest blocked) take the road.
    let (w, h) = (20, 20);
    let mut terrain = vec![GRASS; w * h];
    for y in 0..h {
        for x in 0..w {
            if (8..12).contains(&x) {
                terrain[y * w + x] = FOREST;
            }
            if y == h - 1 {
                terrain[y * w + x] = ROAD;
            }
        }
    }
    let grid = NavGrid::from_terrain(w as u32, h as u32, MoveRules::default(), &terrain).unwrap();
    let vehicles = ClassGrid::new(&grid, MoveClass::new(vehicle(), 0)).unwrap();
    let cfg = SearchConfig::default();
    let (a, b) = (Cell::new(2, 3), Cell::new(17, 3));
    let infantry = find_path(&grid, a, b, &cfg).unwrap();
    let tank = find_path(vehicles.grid(), a, b, &cfg).unwrap();
    let through_forest = |p: &Path| {
        p.cells
            .iter()
            .filter(|&&c| grid.terrain(c) == Ok(FOREST))
            .count()
    };
    assert!(through_forest(&infantry) > 0, "{:?}", infantry.cells);
    assert_eq!(through_forest(&tank), 0, "{:?}", tank.cells);
    // Round by the road, the only way past the forest for them.
    assert!(tank.cells.iter().filter(|c| c.y == h as i32 - 1).count() >= 4);
}

#[test]
fn a_wide_unit_never_plans_through_a_narrow_gap() {
    // A wall down the middle with a one-cell gap near the top and a three-cell gap near the
    // bottom. A body of radius 0.9 (footprint 1: 3 x 3 cells) must take the wide one.
    let (w, h) = (21u32, 21u32);
    let mut grid = NavGrid::new(w, h).unwrap();
    for y in 0..h as i32 {
        if y != 3 && !(15..18).contains(&y) {
            grid.set_walkable(Cell::new(10, y), false).unwrap();
        }
    }
    let radius = 0.9;
    let footprint = MoveClass::footprint_for_radius(radius);
    assert_eq!(footprint, 1);
    let class = MoveClass::new(TerrainCosts::identity(), footprint);
    let wall_radius = class.wall_radius(radius);
    let tanks = ClassGrid::new(&grid, class).unwrap();
    let cfg = SearchConfig::default();
    let (a, b) = (Cell::new(3, 3), Cell::new(17, 3));
    let small = find_path(&grid, a, b, &cfg).unwrap();
    assert!(small.cells.contains(&Cell::new(10, 3)));
    let wide = find_path(tanks.grid(), a, b, &cfg).unwrap();
    for &c in &wide.cells {
        for d in [
            (-1, -1),
            (0, -1),
            (1, -1),
            (-1, 0),
            (1, 0),
            (-1, 1),
            (0, 1),
            (1, 1),
        ] {
            assert!(
                grid.is_walkable(c + IVec2::new(d.0, d.1)),
                "{c} is too tight"
            );
        }
    }
    assert!(wide.cells.contains(&Cell::new(10, 16)), "{:?}", wide.cells);
    // Smoothed on the class grid with the shrunk radius, the real body never touches a wall.
    let points = smooth_path(tanks.grid(), &wide.cells, wall_radius);
    for pair in points.windows(2) {
        assert!(walkable(&grid, pair[0], pair[1], radius), "{pair:?}");
    }
    // With the narrow gap closed too, the goal is on another island of the class grid: refused
    // before any search.
    for y in 15..18 {
        grid.set_walkable(Cell::new(10, y), y != 16).unwrap();
    }
    let mut tanks = tanks;
    let edits: Vec<Cell> = (15..18).map(|y| Cell::new(10, y)).collect();
    tanks.update(&grid, &edits);
    let mut search = AStar::new();
    assert_eq!(
        search.begin(tanks.grid(), a, b, &cfg),
        Err(PathError::Unreachable)
    );
    assert_eq!(search.expansions(), 0);
    // Infantry still goes through the one-cell gaps.
    assert!(find_path(&grid, a, b, &cfg).is_ok());
}

#[test]
fn classes_refuse_what_they_cannot_do() {
    let grid = NavGrid::new(8, 8).unwrap();
    assert_eq!(
        ClassGrid::new(
            &grid,
            MoveClass::new(TerrainCosts::identity(), MAX_CLEARANCE)
        )
        .err(),
        Some(ClassError::FootprintTooLarge {
            footprint: MAX_CLEARANCE
        })
    );
    let hex = NavGrid::with_rules(
        8,
        8,
        MoveRules {
            topology: Topology::Hex,
            ..MoveRules::default()
        },
    )
    .unwrap();
    assert_eq!(
        ClassGrid::new(&hex, MoveClass::new(TerrainCosts::identity(), 1)).err(),
        Some(ClassError::FootprintOnHexagons)
    );
    let swimmers = ClassGrid::new(&hex, MoveClass::new(vehicle(), 0)).unwrap();
    assert!(swimmers.grid().is_walkable(Cell::new(3, 3)));
    // Kind 0 is a wall for every class.
    assert_eq!(
        TerrainCosts::identity().with_cost(BLOCKED, 4).cost(BLOCKED),
        0
    );
    assert_eq!(MoveClass::footprint_for_radius(0.3), 0);
    assert_eq!(MoveClass::footprint_for_radius(0.5), 0);
    assert_eq!(MoveClass::footprint_for_radius(1.4), 1);
    assert_eq!(MoveClass::footprint_for_radius(1.6), 2);
    assert_eq!(MoveClass::footprint_for_radius(f32::NAN), 0);
    // A wide body shrinks against its class grid, but never to a point (a point may sit on the
    // edge between two blocked cells); bodies within a tile keep their radius.
    let wide = MoveClass::new(TerrainCosts::identity(), 1);
    assert_eq!(wide.wall_radius(0.9), MIN_WALL_RADIUS);
    assert!((wide.wall_radius(1.4) - 0.4).abs() < 1e-6);
    assert_eq!(MoveClass::default().wall_radius(0.3), 0.3);
    assert!(
        ClassGrid::new(&grid, MoveClass::default())
            .unwrap()
            .clearance(&grid, Cell::new(9, 0))
            .is_err()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Edits kept up to date cell by cell give the grid a fresh build gives: terrain, clearance,
    /// penalties and which cells share an island; and clearance is what its definition says.
    #[test]
    fn class_grids_follow_edits(
        w in 2u32..16,
        h in 2u32..16,
        start in proptest::collection::vec(prop_oneof![Just(GRASS), Just(FOREST), Just(ROAD), Just(WATER), Just(BLOCKED)], 256),
        footprint in 0u8..MAX_CLEARANCE,
        vehicles in any::<bool>(),
        edits in proptest::collection::vec((0i32..16, 0i32..16, prop_oneof![Just(GRASS), Just(FOREST), Just(BLOCKED), Just(WATER)], 0u32..3), 1..30),
        batch in 1usize..5,
    ) {
        let terrain: Vec<u8> = start[..(w * h) as usize].to_vec();
        let mut grid = NavGrid::from_terrain(w, h, MoveRules::default(), &terrain).unwrap();
        let costs = if vehicles { vehicle() } else { TerrainCosts::identity() };
        let class = MoveClass::new(costs.clone(), footprint);
        let mut kept = ClassGrid::new(&grid, class.clone()).unwrap();
        for chunk in edits.chunks(batch) {
            let mut changed = Vec::new();
            for &(x, y, kind, penalty) in chunk {
                let c = Cell::new(x, y);
                if grid.in_bounds(c) {
                    grid.set_terrain(c, kind).unwrap();
                    grid.set_penalty(c, penalty * 100).unwrap();
                    changed.push(c);
                }
            }
            kept.update(&grid, &changed);
        }
        let fresh = ClassGrid::new(&grid, class).unwrap();
        for c in grid.cells() {
            prop_assert_eq!(kept.grid().terrain(c), fresh.grid().terrain(c), "terrain at {}", c);
            prop_assert_eq!(kept.grid().penalty(c), fresh.grid().penalty(c));
            let clearance = kept.clearance(&grid, c).unwrap();
            prop_assert_eq!(clearance, fresh.clearance(&grid, c).unwrap());
            if footprint > 0 {
                prop_assert_eq!(clearance, clearance_by_definition(&grid, &costs, c), "clearance at {}", c);
            }
            for d in [IVec2::X, IVec2::Y, IVec2::new(3, 1)] {
                let n = c + d;
                prop_assert_eq!(kept.grid().connected(c, n), fresh.grid().connected(c, n));
            }
        }
        prop_assert_eq!(kept.grid().island_count(), fresh.grid().island_count());
    }
}

#[test]
fn clearance_counts_free_rings() {
    let mut grid = NavGrid::new(9, 9).unwrap();
    grid.set_walkable(Cell::new(4, 4), false).unwrap();
    let class = ClassGrid::new(&grid, MoveClass::new(TerrainCosts::identity(), 1)).unwrap();
    let at = |x, y| class.clearance(&grid, Cell::new(x, y)).unwrap();
    assert_eq!(at(4, 4), 0);
    assert_eq!(at(3, 3), 1);
    assert_eq!(at(0, 8), 1); // the edge
    assert_eq!(at(2, 2), 2);
    assert_eq!(at(1, 1), 2); // two rings to the edge
    // Footprint 1 needs clearance 2: the cells next to the wall and the edge are blocked.
    assert!(!class.grid().is_walkable(Cell::new(3, 4)));
    assert!(class.grid().is_walkable(Cell::new(2, 4)));
    assert!(!class.grid().is_walkable(Cell::new(0, 4)));
    let _ = Vec2::ZERO;
}

// The plugin: units of several classes and sizes in one app, as a game runs them.

mod plugin {
    use std::time::Duration;

    use bevy::prelude::*;
    use bevy::time::TimeUpdateStrategy;
    use bevy_tilepath::core::*;
    use bevy_tilepath::prelude::*;
    use bevy_tilepath::{ClassId, MoveState, OutcomeKind, PathFailure, PathProgress, UnitClass};

    use super::support::position as pos;
    use super::{FOREST, GRASS, vehicle};

    #[derive(Resource, Default)]
    struct Outcomes(Vec<PathOutcome>);

    fn app(grid: NavGrid) -> App {
        let mut app = App::new();
        app.add_plugins(MinimalPlugins)
            .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
                1.0 / 60.0,
            )))
            .add_plugins(TilepathPlugins::default())
            .init_resource::<Outcomes>()
            .add_systems(
                Update,
                |mut r: MessageReader<PathOutcome>, mut log: ResMut<Outcomes>| {
                    log.0.extend(r.read().copied())
                },
            );
        app.world_mut()
            .spawn(NavMap::new(grid, Vec2::ZERO, Vec2::ONE));
        app.update();
        app
    }

    fn spawn(app: &mut App, at: Cell, goal: Cell, radius: f32, class: Option<UnitClass>) -> Entity {
        let p = at.as_vec2() + 0.5;
        let mut e = app.world_mut().spawn((
            Transform::from_xyz(p.x, p.y, 0.0),
            Mover::default(),
            NavAgent { radius },
            PathRequest::to_cell(goal),
        ));
        if let Some(class) = class {
            e.insert(class);
        }
        e.id()
    }

    /// How the requests of `e` ended, in order.
    fn outcomes_of(app: &App, e: Entity) -> Vec<OutcomeKind> {
        let outcomes = &app.world().resource::<Outcomes>().0;
        outcomes
            .iter()
            .filter(|o| o.entity == e)
            .map(|o| o.kind)
            .collect()
    }

    /// A wall down x = 20 with a one-cell gap at y = 5 and a three-cell gap at y = 22..25, and
    /// a forest from x = 8 to 11 below y = 25 (open above).
    fn field() -> NavGrid {
        let (w, h) = (40, 30);
        let mut terrain = vec![GRASS; w * h];
        for y in 0..h {
            for x in 0..w {
                if x == 20 && y != 5 && !(22..25).contains(&y) {
                    terrain[y * w + x] = BLOCKED;
                }
                if (8..12).contains(&x) && y < 25 {
                    terrain[y * w + x] = FOREST;
                }
            }
        }
        NavGrid::from_terrain(w as u32, h as u32, MoveRules::default(), &terrain).unwrap()
    }

    #[test]
    fn tanks_keep_out_of_forest_and_narrow_gaps_infantry_takes_them() {
        let grid = field();
        let mut app = app(grid.clone());
        let (from, to) = (Cell::new(3, 5), Cell::new(36, 5));
        let infantry = spawn(&mut app, from, to, 0.3, None);
        let tank = spawn(
            &mut app,
            Cell::new(3, 15),
            to + Cell::new(0, 3),
            0.9,
            Some(UnitClass::new(vehicle())),
        );
        // The tank's own walls: real walls and forest, for its real body.
        let tank_walls = ClassGrid::new(&grid, MoveClass::new(vehicle(), 0)).unwrap();
        let mut through_forest = false;
        for _ in 0..60 * 60 {
            app.update();
            let p = pos(&app, tank);
            assert!(
                !overlaps_blocked(tank_walls.grid(), p, 0.9 - 1e-3),
                "the tank's body overlaps a wall or forest at {p}"
            );
            let q = pos(&app, infantry);
            assert!(
                !overlaps_blocked(&grid, q, 0.3 - 1e-3),
                "infantry in a wall at {q}"
            );
            through_forest |= grid.terrain(grid.cell_at(q)) == Ok(FOREST);
            let done = |e| app.world().get::<PathProgress>(e).unwrap().state == MoveState::Arrived;
            if done(tank) && done(infantry) {
                break;
            }
        }
        assert_ne!(app.world().get::<ClassId>(tank), None);
        assert_eq!(
            app.world().get::<ClassId>(infantry),
            None,
            "infantry is the default class"
        );
        for (e, goal) in [(infantry, to), (tank, to + Cell::new(0, 3))] {
            assert_eq!(
                app.world().get::<PathProgress>(e).unwrap().state,
                MoveState::Arrived
            );
            assert_eq!(grid.cell_at(pos(&app, e)), goal);
        }
        assert!(through_forest, "infantry cuts through the forest");
        let tank_path = app.world().get::<NavPath>(tank).unwrap();
        assert!(
            tank_path
                .cells
                .iter()
                .all(|c| c.x != 20 || (22..25).contains(&c.y))
        );
        let infantry_path = app.world().get::<NavPath>(infantry).unwrap();
        assert!(infantry_path.cells.contains(&Cell::new(20, 5)));
    }

    #[test]
    fn a_class_that_cannot_get_there_fails_at_once() {
        // Only the one-cell gap leads to the right half for a tank once the wide gap is shut.
        let mut grid = field();
        for y in 22..25 {
            grid.set_walkable(Cell::new(20, y), false).unwrap();
        }
        let mut app = app(grid);
        let tank = spawn(&mut app, Cell::new(3, 15), Cell::new(30, 15), 0.9, None);
        let infantry = spawn(&mut app, Cell::new(3, 16), Cell::new(30, 16), 0.3, None);
        for _ in 0..600 {
            app.update();
            if app
                .world()
                .get::<PathProgress>(infantry)
                .is_some_and(|p| p.state == MoveState::Arrived)
            {
                break;
            }
        }
        let of = |e| outcomes_of(&app, e);
        assert_eq!(
            of(tank),
            vec![OutcomeKind::Failed(PathFailure::Unreachable)]
        );
        let outcomes = &app.world().resource::<Outcomes>().0;
        let tank_outcome = outcomes.iter().find(|o| o.entity == tank).unwrap();
        assert!(
            tank_outcome.latency_frames <= 1,
            "answered without a search"
        );
        assert!(matches!(of(infantry)[..], [OutcomeKind::Found { .. }]));
        // The map keeps the grid of the tank's size, islands and all.
        let maps = app.world().resource::<bevy_tilepath::NavClasses>();
        assert_eq!(maps.len(), 2);
    }

    #[test]
    fn under_fog_a_unit_walks_into_the_unknown_sees_a_wall_repaths_and_arrives() {
        // A wall across the middle with a gap at the far top: a player who has seen nothing
        // plans straight through it, sees it on the way, plans again and goes round.
        let (w, h) = (30u32, 20u32);
        let mut grid = NavGrid::new(w, h).unwrap();
        for y in 0..h as i32 - 2 {
            grid.set_walkable(Cell::new(15, y), false).unwrap();
        }
        let mut app = app(grid.clone());
        app.world_mut()
            .resource_mut::<TilepathSettings>()
            .fog
            .enabled = true;
        let (from, to) = (Cell::new(3, 3), Cell::new(27, 3));
        let p = from.as_vec2() + 0.5;
        let unit = app
            .world_mut()
            .spawn((
                Transform::from_xyz(p.x, p.y, 0.0),
                Mover::default(),
                NavAgent::default(),
                bevy_tilepath::PlayerId(1),
                bevy_tilepath::Sight { radius: 4.0 },
                PathRequest::to_cell(to),
            ))
            .id();
        // A second player's unit standing by the wall all along: its sight is not the first's.
        let q = Cell::new(14, 3).as_vec2() + 0.5;
        app.world_mut().spawn((
            Transform::from_xyz(q.x, q.y, 0.0),
            Mover::default(),
            NavAgent::default(),
            bevy_tilepath::PlayerId(2),
        ));
        let mut first_path = None;
        for _ in 0..60 * 40 {
            app.update();
            let here = pos(&app, unit);
            assert!(
                !overlaps_blocked(&grid, here, 0.3 - 1e-3),
                "in the wall at {here}"
            );
            if first_path.is_none()
                && let Some(path) = app.world().get::<NavPath>(unit)
            {
                first_path = Some(path.cells.clone());
            }
            if app
                .world()
                .get::<PathProgress>(unit)
                .is_some_and(|p| p.state == MoveState::Arrived)
            {
                break;
            }
        }
        let first = first_path.expect("a path");
        assert!(
            first.iter().any(|c| c.x == 15 && c.y < h as i32 - 2),
            "the first plan goes through the unseen wall: {first:?}"
        );
        assert_eq!(
            app.world().get::<PathProgress>(unit).unwrap().state,
            MoveState::Arrived
        );
        assert_eq!(grid.cell_at(pos(&app, unit)), to);
        let outcomes = &app.world().resource::<Outcomes>().0;
        assert!(
            outcomes
                .iter()
                .any(|o| o.entity == unit && o.origin == bevy_tilepath::PathOrigin::Revealed),
            "it planned again when it saw the wall"
        );
        let last = app.world().get::<NavPath>(unit).unwrap();
        assert!(last.cells.iter().all(|c| grid.is_walkable(*c)));
        let maps: Vec<&NavMap> = app
            .world_mut()
            .query::<&NavMap>()
            .iter(app.world())
            .collect();
        let known = maps[0].knowledge(1).expect("player 1 has looked");
        assert!(known.is_seen(Cell::new(15, 3)));
        assert!(
            !known.is_seen(Cell::new(29, 19)),
            "a corner nobody went near"
        );
        assert!(app.world().resource::<bevy_tilepath::FogStats>().revealed > 0);
    }

    #[test]
    fn a_tanks_long_request_goes_through_its_own_region_map() {
        // 200 x 40: a wall down x = 100 with a one-cell gap at y = 5 and a three-cell one at
        // y = 30..33. A tank's request across is longer than the hierarchical threshold. A
        // marsh cell: on a grid of one terrain the request would be a flat jump point search.
        let mut grid = NavGrid::new(200, 40).unwrap();
        for y in 0..40 {
            if y != 5 && !(30..33).contains(&y) {
                grid.set_walkable(Cell::new(100, y), false).unwrap();
            }
        }
        grid.set_terrain(Cell::new(50, 38), 3).unwrap();
        let mut app = app(grid.clone());
        let p = Cell::new(5, 5).as_vec2() + 0.5;
        let tank = app
            .world_mut()
            .spawn((
                Transform::from_xyz(p.x, p.y, 0.0),
                Mover::default(),
                NavAgent { radius: 0.9 },
            ))
            .id();
        // The tank's class appears, and its region map is built on the async compute pool.
        for _ in 0..50 {
            app.update();
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        // An edit the region map must follow: the wide gap moves down a cell.
        let mut maps = app.world_mut().query::<&mut NavMap>();
        let mut map = maps.single_mut(app.world_mut()).unwrap();
        map.set_walkable(Cell::new(100, 30), false).unwrap();
        map.set_walkable(Cell::new(100, 33), true).unwrap();
        grid.set_walkable(Cell::new(100, 30), false).unwrap();
        grid.set_walkable(Cell::new(100, 33), true).unwrap();
        app.update();
        let goal = Cell::new(190, 5);
        app.world_mut()
            .entity_mut(tank)
            .insert(PathRequest::to_cell(goal));
        for _ in 0..60 * 60 {
            app.update();
            let here = pos(&app, tank);
            assert!(
                !overlaps_blocked(&grid, here, 0.9 - 1e-3),
                "in a wall at {here}"
            );
            if app
                .world()
                .get::<PathProgress>(tank)
                .is_some_and(|p| p.state == MoveState::Arrived)
            {
                break;
            }
        }
        assert!(
            matches!(
                outcomes_of(&app, tank)[..],
                [OutcomeKind::Found {
                    search: bevy_tilepath::SearchKind::Hierarchical,
                    ..
                }]
            ),
            "{:?}",
            outcomes_of(&app, tank)
        );
        let path = app.world().get::<NavPath>(tank).unwrap();
        assert!(
            path.cells
                .iter()
                .all(|c| c.x != 100 || (31..34).contains(&c.y))
        );
        assert_eq!(grid.cell_at(pos(&app, tank)), goal);
    }

    #[test]
    fn a_unit_too_wide_for_hexagons_fails_with_a_reason() {
        let grid = NavGrid::with_rules(
            12,
            12,
            MoveRules {
                topology: Topology::Hex,
                ..MoveRules::default()
            },
        )
        .unwrap();
        let mut app = app(grid);
        let wide = spawn(&mut app, Cell::new(1, 1), Cell::new(8, 8), 0.9, None);
        let swimmer = spawn(
            &mut app,
            Cell::new(1, 2),
            Cell::new(8, 9),
            0.3,
            Some(UnitClass::new(vehicle())),
        );
        for _ in 0..300 {
            app.update();
        }
        let of = |e| outcomes_of(&app, e);
        assert_eq!(
            of(wide),
            vec![OutcomeKind::Failed(PathFailure::UnitTooWide)]
        );
        assert!(matches!(of(swimmer)[..], [OutcomeKind::Found { .. }]));
    }

    /// A river down x = 18..22 with a bridge three tiles wide (rows 9 to 11) on a 40 x 21 map:
    /// one cell wide on a tank's grid, three on infantry's.
    fn bridge() -> NavGrid {
        let mut grid = NavGrid::new(40, 21).unwrap();
        for x in 18..22 {
            for y in 0..21 {
                if !(9..12).contains(&y) {
                    grid.set_walkable(Cell::new(x, y), false).unwrap();
                }
            }
        }
        grid
    }

    /// One frame of a tank (radius 0.9) among infantry (radius 0.3) on `grid`: asserts no body
    /// overlaps a blocked cell, and returns how many infantry the tank's body has sunk into by
    /// more than a fifth of their radii (as the demo's crowd figures count them).
    fn tank_among_infantry(app: &App, grid: &NavGrid, tank: Entity, infantry: &[Entity]) -> usize {
        let t = pos(app, tank);
        assert!(
            !overlaps_blocked(grid, t, 0.9 - 1e-3),
            "the tank's body in a wall at {t}"
        );
        infantry
            .iter()
            .filter(|&&e| {
                let q = pos(app, e);
                assert!(
                    !overlaps_blocked(grid, q, 0.3 - 1e-3),
                    "infantry in a wall at {q}"
                );
                t.distance(q) < 0.8 * (0.9 + 0.3)
            })
            .count()
    }

    #[test]
    fn infantry_standing_in_a_gate_makes_way_for_a_tank() {
        // A wall down x = 20 with a gap three tiles wide (rows 9 to 11): one cell wide for a
        // tank. Six infantry stand in and beside the gap; a tank drives through it.
        let mut grid = NavGrid::new(40, 21).unwrap();
        for y in 0..21 {
            if !(9..12).contains(&y) {
                grid.set_walkable(Cell::new(20, y), false).unwrap();
            }
        }
        let mut app = app(grid.clone());
        let standing: Vec<Entity> = [(19, 9), (20, 10), (20, 11), (21, 9), (21, 10), (19, 11)]
            .into_iter()
            .map(|(x, y)| spawn(&mut app, Cell::new(x, y), Cell::new(x, y), 0.3, None))
            .collect();
        for _ in 0..30 {
            app.update();
        }
        let tank = spawn(&mut app, Cell::new(8, 10), Cell::new(32, 10), 0.9, None);
        let goal = Vec2::new(32.5, 10.5);
        let (mut tank_arrived, mut overlapping) = (None, 0);
        for frame in 0..60 * 30 {
            app.update();
            overlapping += tank_among_infantry(&app, &grid, tank, &standing);
            let t = pos(&app, tank);
            let arrived =
                app.world().get::<PathProgress>(tank).unwrap().state == MoveState::Arrived;
            if arrived && t.distance(goal) < 1.5 {
                tank_arrived = Some(frame);
                break;
            }
        }
        let tank_arrived = tank_arrived.expect("the tank gets through");
        // Alone it takes 6 s (24 tiles at 4 a second); through the standing infantry it took
        // 6.85 s, shoving them aside with no body sunk into another.
        assert!(
            tank_arrived < 60 * 8,
            "the tank arrived after {tank_arrived} frames"
        );
        assert!(
            overlapping <= 5,
            "{overlapping} infantry-frames overlapping the tank"
        );
    }

    #[test]
    fn a_mixed_crowd_pressed_against_a_wall_keeps_its_bodies_apart() {
        // A wall down x = 24 with no gap; 56 infantry and 8 tanks on its left all ordered to
        // (nearly) one cell just left of it: they gather and press against the wall and each
        // other.
        let mut grid = NavGrid::new(40, 30).unwrap();
        for y in 0..30 {
            grid.set_walkable(Cell::new(24, y), false).unwrap();
        }
        let mut app = app(grid.clone());
        let target = Cell::new(23, 15);
        let units: Vec<(Entity, f32)> = (0..64)
            .map(|k| {
                let at = Cell::new(2 + (k % 8) * 2, 7 + (k / 8) * 2);
                // A tank's body cannot stand next to the wall: its goal is a cell further off.
                let (radius, goal) = if k % 8 == 3 {
                    (0.9, target - Cell::X)
                } else {
                    (0.3, target)
                };
                (spawn(&mut app, at, goal, radius, None), radius)
            })
            .collect();
        let (mut overlapping, mut unit_frames) = (0usize, 0usize);
        for frame in 0..60 * 40 {
            app.update();
            let at: Vec<(Vec2, f32)> = units.iter().map(|&(e, r)| (pos(&app, e), r)).collect();
            for (i, &(p, r)) in at.iter().enumerate() {
                assert!(
                    !overlaps_blocked(&grid, p, r - 1e-3),
                    "a body in the wall at {p} (frame {frame})"
                );
                unit_frames += 1;
                if at
                    .iter()
                    .enumerate()
                    .any(|(j, &(q, s))| j != i && p.distance(q) < 0.8 * (r + s))
                {
                    overlapping += 1;
                }
            }
        }
        // At most 1 % of unit-frames; measured: 0.015 %.
        assert!(
            overlapping * 100 < unit_frames,
            "{overlapping} of {unit_frames} unit-frames overlapping"
        );
        // The crowd settled: every unit stopped, packed round the target.
        let (mut stopped, mut near) = (0, 0);
        for &(e, _) in &units {
            stopped += usize::from(
                app.world().get::<PathProgress>(e).unwrap().state == MoveState::Arrived,
            );
            near += usize::from(pos(&app, e).distance(target.as_vec2() + 0.5) < 8.0);
        }
        assert_eq!(stopped, units.len());
        assert!(near >= 60, "only {near} of 64 within 8 tiles of the target");
    }

    #[test]
    fn a_tank_and_thirty_infantry_cross_a_bridge_three_tiles_wide_both_ways() {
        let grid = bridge();
        let mut app = app(grid.clone());
        let tank = spawn(&mut app, Cell::new(12, 10), Cell::new(35, 10), 0.9, None);
        let goal = Vec2::new(35.5, 10.5);
        // Thirty infantry in a column three abreast east of the river, going west over the
        // bridge as the tank drives onto it.
        let infantry: Vec<Entity> = (0..30)
            .map(|k| {
                let (file, rank) = (k % 3, k / 3);
                let at = Cell::new(24 + rank, 9 + file);
                spawn(&mut app, at, Cell::new(2 + rank, 9 + file), 0.3, None)
            })
            .collect();
        let arrived =
            |app: &App, e| app.world().get::<PathProgress>(e).unwrap().state == MoveState::Arrived;
        let (mut tank_arrived, mut overlapping, mut frames) = (None, 0, 0);
        for frame in 0..60 * 60 {
            app.update();
            frames = frame + 1;
            overlapping += tank_among_infantry(&app, &grid, tank, &infantry);
            let t = pos(&app, tank);
            // Arrived at its goal (not at a cell it stepped aside to).
            if tank_arrived.is_none() && arrived(&app, tank) && t.distance(goal) < 1.5 {
                tank_arrived = Some(frame);
            }
            if tank_arrived.is_some() && infantry.iter().all(|&e| arrived(&app, e)) {
                break;
            }
        }
        let tank_arrived = tank_arrived.expect("the tank arrives");
        assert!(
            infantry.iter().all(|&e| arrived(&app, e)),
            "every infantry arrives"
        );
        // Alone it takes about 6 s (23 tiles at 4 a second); meeting the column it took 10.3 s.
        // Infantry coming over no longer closes the bridge to it: when it did, the tank waited
        // for the whole column and took 13.7 s.
        assert!(
            tank_arrived < 60 * 12,
            "the tank arrived after {tank_arrived} frames"
        );
        assert!(
            overlapping < 60,
            "{overlapping} infantry-frames overlapping the tank in {frames} frames"
        );
    }

    /// A river down x = 18..22 with two bridges three tiles wide (rows 9 to 11 and 27 to 29)
    /// on a 40 x 40 map: each one cell wide on a tank's grid.
    fn two_bridges() -> NavGrid {
        let mut grid = NavGrid::new(40, 40).unwrap();
        for x in 18..22 {
            for y in 0..40 {
                if !(9..12).contains(&y) && !(27..30).contains(&y) {
                    grid.set_walkable(Cell::new(x, y), false).unwrap();
                }
            }
        }
        grid
    }

    /// The passages a tank's path crosses are recorded while it walks (only for units the
    /// plugin's movement walks) and forgotten once it is past them, or despawned.
    #[test]
    fn passage_traffic_is_kept_only_while_a_walking_tank_has_a_passage_ahead() {
        let mut app = app(two_bridges());
        let e = |app: &mut App| spawn(app, Cell::new(8, 10), Cell::new(32, 10), 0.9, None);
        let (a, b) = (e(&mut app), e(&mut app));
        // A tank the game moves itself: no Mover.
        let own = app
            .world_mut()
            .spawn((
                Transform::from_xyz(8.5, 28.5, 0.0),
                NavAgent { radius: 0.9 },
                PathRequest::to_cell(Cell::new(32, 28)),
            ))
            .id();
        for _ in 0..3 {
            app.update();
        }
        assert!(app.world().get::<NavPath>(own).is_some());
        fn traffic(app: &App) -> &bevy_tilepath::plugin::traffic::PassageTraffic {
            app.world().resource()
        }
        assert_eq!(
            traffic(&app).len(),
            2,
            "the two walking tanks, not the game's own"
        );
        assert_eq!(traffic(&app).crossings(a).len(), 1);
        app.world_mut().despawn(b);
        app.update();
        assert_eq!(
            traffic(&app).len(),
            1,
            "a despawned tank's crossings are forgotten"
        );
        for _ in 0..60 * 15 {
            app.update();
            if traffic(&app).is_empty() {
                break;
            }
        }
        assert!(traffic(&app).is_empty(), "past the bridge, nothing is kept");
        let x = pos(&app, a).x;
        assert!(x > 22.0, "dropped only once past the river (at x = {x})");
    }

    /// Eight tanks each way ordered past each other across a river in the same frame, all
    /// nearest the north bridge: with passage traffic priced, one column takes the other
    /// bridge (its first search did not see the other column, which was searched in the same
    /// frame: it is searched again once), and both columns are over sooner than when both
    /// meet on one bridge and take turns on it.
    #[test]
    fn tank_columns_ordered_past_each_other_take_two_bridges() {
        let run = |traffic: f32| {
            let grid = two_bridges();
            let mut app = app(grid.clone());
            app.world_mut()
                .resource_mut::<TilepathSettings>()
                .crowd
                .passage_traffic = traffic;
            let mut tanks = Vec::new();
            for k in 0..8 {
                let (rank, file) = (k / 2, k % 2);
                let y = 8 + 3 * file;
                let east = spawn(
                    &mut app,
                    Cell::new(4 + 3 * rank, y),
                    Cell::new(30 + 2 * rank, y),
                    0.9,
                    None,
                );
                let west = spawn(
                    &mut app,
                    Cell::new(35 - 3 * rank, y),
                    Cell::new(9 - 2 * rank, y),
                    0.9,
                    None,
                );
                tanks.push((east, true));
                tanks.push((west, false));
            }
            // Which bridge each column's paths cross at first.
            let mut bridges = [Vec::new(), Vec::new()];
            let mut outcomes = 0;
            for frame in 0..60 * 90 {
                app.update();
                if frame == 10 {
                    for &(e, east) in &tanks {
                        let path = app.world().get::<NavPath>(e).expect("a path");
                        let north = path.cells.iter().any(|c| c.x == 20 && c.y < 20);
                        bridges[east as usize].push(north);
                    }
                    outcomes = app.world().resource::<Outcomes>().0.len();
                }
                let arrived = tanks.iter().all(|&(e, _)| {
                    app.world().get::<PathProgress>(e).unwrap().state == MoveState::Arrived
                });
                if arrived {
                    let frames = frame + 1;
                    for &(e, _) in &tanks {
                        let p = pos(&app, e);
                        assert!(
                            !overlaps_blocked(&grid, p, 0.9 - 1e-3),
                            "in the river at {p}"
                        );
                    }
                    return (bridges, frames, outcomes);
                }
            }
            panic!("the tanks did not all arrive in 90 s (traffic {traffic})");
        };
        let (bridges, frames, outcomes) = run(8.0);
        let (west, east) = (&bridges[0], &bridges[1]);
        assert_eq!(
            outcomes, 16,
            "one outcome each (a search again is not an outcome)"
        );
        assert!(
            east.iter().all(|&n| n) != west.iter().all(|&n| n)
                && (east.iter().all(|&n| !n) || west.iter().all(|&n| !n)),
            "one column a bridge each: eastward {east:?}, westward {west:?}"
        );
        let (same, alone_frames, _) = run(0.0);
        assert!(
            same[0].iter().chain(&same[1]).all(|&n| n),
            "without pricing both columns take the north bridge: {same:?}"
        );
        assert!(
            frames < alone_frames,
            "over in {frames} frames on two bridges, {alone_frames} on one"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// A player's class grid kept up to date through reveals and edits equals a fresh one made
    /// with the same knowledge; and it never depends on cells the player has not seen: a grid
    /// that differs from the truth only there gives the same class grid.
    #[test]
    fn fog_grids_follow_reveals_and_never_read_unseen_cells(
        w in 2u32..14,
        h in 2u32..14,
        start in proptest::collection::vec(prop_oneof![Just(GRASS), Just(FOREST), Just(BLOCKED)], 196),
        footprint in 0u8..3,
        assumed in prop_oneof![Just(GRASS), Just(BLOCKED)],
        steps in proptest::collection::vec((0i32..14, 0i32..14, any::<bool>(), prop_oneof![Just(GRASS), Just(BLOCKED), Just(WATER)]), 1..40),
        lies in proptest::collection::vec((0i32..14, 0i32..14, prop_oneof![Just(GRASS), Just(BLOCKED), Just(ROAD)]), 0..30),
    ) {
        let terrain: Vec<u8> = start[..(w * h) as usize].to_vec();
        let mut grid = NavGrid::from_terrain(w, h, MoveRules::default(), &terrain).unwrap();
        let class = MoveClass::new(vehicle(), footprint);
        let mut known = Knowledge::new(&grid, assumed);
        let mut kept = ClassGrid::with_knowledge(&grid, class.clone(), known.clone()).unwrap();
        for &(x, y, reveal, kind) in &steps {
            let c = Cell::new(x, y);
            if reveal {
                let around: Vec<Cell> = (-1..=1).flat_map(|dy| (-1..=1).map(move |dx| c + IVec2::new(dx, dy))).collect();
                for &a in &around {
                    known.reveal(a);
                }
                kept.reveal(&grid, &around);
            } else if grid.in_bounds(c) {
                grid.set_terrain(c, kind).unwrap();
                kept.update(&grid, &[c]);
            }
        }
        prop_assert_eq!(kept.knowledge(), Some(&known));
        let fresh = ClassGrid::with_knowledge(&grid, class.clone(), known.clone()).unwrap();
        // The truth changed where the player has not looked.
        let mut other = grid.clone();
        for &(x, y, kind) in &lies {
            let c = Cell::new(x, y);
            if other.in_bounds(c) && !known.is_seen(c) {
                other.set_terrain(c, kind).unwrap();
            }
        }
        let fooled = ClassGrid::with_knowledge(&other, class, known.clone()).unwrap();
        for c in grid.cells() {
            prop_assert_eq!(kept.grid().terrain(c), fresh.grid().terrain(c), "terrain at {}", c);
            prop_assert_eq!(fooled.grid().terrain(c), fresh.grid().terrain(c), "unseen truth read at {}", c);
            prop_assert_eq!(kept.clearance(&grid, c), fresh.clearance(&grid, c));
            for d in [IVec2::X, IVec2::Y, IVec2::new(2, 1)] {
                prop_assert_eq!(kept.grid().connected(c, c + d), fresh.grid().connected(c, c + d));
            }
        }
    }
}

#[test]
fn knowledge_counts_what_was_seen() {
    let grid = NavGrid::new(70, 3).unwrap();
    let mut known = Knowledge::new(&grid, GRASS);
    assert!(!known.is_seen(Cell::new(65, 2)));
    assert!(known.reveal(Cell::new(65, 2)));
    assert!(!known.reveal(Cell::new(65, 2)), "seen once");
    assert!(!known.reveal(Cell::new(70, 0)), "outside");
    assert!(known.is_seen(Cell::new(65, 2)));
    assert_eq!(known.seen_count(), 1);
    assert_eq!(known.size(), (70, 3));
    let small = NavGrid::new(5, 5).unwrap();
    assert_eq!(
        ClassGrid::with_knowledge(&small, MoveClass::default(), known).err(),
        Some(ClassError::KnowledgeOfAnotherSize)
    );
}
