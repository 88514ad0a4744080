//! Every query of the arena, den312d and arena2 MovingAI scenarios must come out at its optimal
//! length, with A* and with jump point search (maps: Sturtevant, "Benchmarks for Grid-Based Pathfinding", 2012; see
//! `assets/movingai/README.md`).

use bevy_tilepath::core::movingai::{Scenario, parse_map, parse_scen, read_map, read_scen};
use bevy_tilepath::core::{AStar, MoveRules, NavGrid, SearchConfig, SearchStep, find_path};
use proptest::prelude::*;

/// The grid of `assets/movingai/maps/<map>` and the queries of its scenario file.
fn load(map: &str) -> (NavGrid, Vec<Scenario>) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/movingai");
    let grid = read_map(format!("{dir}/maps/{map}"), MoveRules::default()).unwrap();
    let scens = read_scen(format!("{dir}/scenarios/{map}.scen")).unwrap();
    (grid, scens)
}

fn check(map: &str, min_queries: usize) {
    check_with(map, min_queries, SearchConfig::default());
    // Jump point search too.
    let jumps = SearchConfig {
        jump_points: true,
        ..SearchConfig::default()
    };
    check_with(map, min_queries, jumps);
    // And with the jump table (JPS+).
    check_table(map, jumps);
}

/// Every query by jump points reading a jump table: the optimal length, and the same path as
/// scanning finds.
fn check_table(map: &str, config: SearchConfig) {
    let (grid, scens) = load(map);
    let mut tabled = grid.clone();
    tabled.build_jump_table();
    assert!(tabled.has_jump_table());
    for (row, s) in scens.iter().enumerate() {
        let read = find_path(&tabled, s.start, s.goal, &config)
            .unwrap_or_else(|e| panic!("{map} row {row}: {e}"));
        assert!(
            s.matches(read.length),
            "{map} row {row}: JPS+ {}",
            read.length
        );
        let scanned = find_path(&grid, s.start, s.goal, &config).unwrap();
        assert_eq!(read.cells, scanned.cells, "{map} row {row}");
    }
}

fn check_with(map: &str, min_queries: usize, config: SearchConfig) {
    let (grid, scens) = load(map);
    assert!(scens.len() >= min_queries);
    for (row, s) in scens.iter().enumerate() {
        let path = find_path(&grid, s.start, s.goal, &config)
            .unwrap_or_else(|e| panic!("{map} row {row}: {e}"));
        assert!(
            s.matches(path.length),
            "{map} row {row}: length {} vs optimal {}",
            path.length,
            s.optimal_text
        );
        assert_eq!(path.cells.first(), Some(&s.start));
        assert_eq!(path.cells.last(), Some(&s.goal));
        for w in path.cells.windows(2) {
            assert!(
                grid.can_step(w[0], w[1]),
                "{map} row {row}: illegal step {w:?}"
            );
        }
    }
}

#[test]
fn arena_is_optimal() {
    check("dao/arena.map", 160);
}

#[test]
fn den312d_is_optimal() {
    check("dao/den312d.map", 320);
}

#[test]
fn arena2_is_optimal() {
    check("dao/arena2.map", 929);
}

#[test]
fn resumed_search_matches_one_shot() {
    let (grid, scens) = load("dao/den312d.map");
    let mut search = AStar::new();
    for s in scens.iter().step_by(7) {
        let one_shot = find_path(&grid, s.start, s.goal, &SearchConfig::default()).unwrap();
        search
            .begin(&grid, s.start, s.goal, &SearchConfig::default())
            .unwrap();
        let mut steps = 0;
        let resumed = loop {
            steps += 1;
            match search.step(&grid, 5) {
                SearchStep::Pending => continue,
                SearchStep::Found(p) => break p,
                SearchStep::Failed(e) => panic!("{e}"),
            }
        };
        assert_eq!(resumed.cost, one_shot.cost);
        assert_eq!(resumed.expansions, one_shot.expansions);
        assert!(steps as u32 >= one_shot.expansions / 5);
    }
}

#[test]
fn malformed_files_name_the_line() {
    let e = parse_map(
        "type octile\nheight 2\nwidth 2\nmap\n..\n.x\n",
        MoveRules::default(),
    )
    .unwrap_err();
    assert_eq!(e.line, 6);
    let e = parse_map(
        "type octile\nheight 3\nwidth 2\nmap\n..\n..\n",
        MoveRules::default(),
    )
    .unwrap_err();
    assert!(e.message.contains("expected 3 rows"), "{e}");
    let e = parse_scen("version 1\n0\tm.map\t2\t2\t0\t0\t1\n").unwrap_err();
    assert_eq!(e.line, 2);
    let e = parse_scen("version 2\n").unwrap_err();
    assert_eq!(e.line, 1);
    let ok = parse_scen("version 1.0\n0 m.map 2 2 0 0 1 1 1.41421\n").unwrap();
    assert_eq!(ok.len(), 1);
}

/// Hierarchical search on arena2: every query gets a legal path from start to goal, never shorter
/// than the optimum, and on average close to it (measured 3.7 % longer on queries of 100 tiles
/// and more with 16 x 16 clusters).
#[test]
fn arena2_hierarchical_paths_are_legal_and_near_optimal() {
    use bevy_tilepath::core::{RegionMap, find_path_hierarchical};
    let (grid, scens) = load("dao/arena2.map");
    let regions = RegionMap::build(&grid, 16);
    let (mut excess, mut long) = (0.0, 0);
    for (row, s) in scens.iter().enumerate() {
        let p = find_path_hierarchical(&grid, &regions, s.start, s.goal, &SearchConfig::default())
            .unwrap_or_else(|e| panic!("row {row}: {e}"));
        assert_eq!(p.cells.first(), Some(&s.start), "row {row}");
        assert_eq!(p.cells.last(), Some(&s.goal), "row {row}");
        assert!(
            p.cells.windows(2).all(|w| grid.can_step(w[0], w[1])),
            "row {row}"
        );
        // Optimal lengths are printed to 6 significant digits.
        assert!(
            p.length >= s.optimal * (1.0 - 1e-5),
            "row {row}: {} < {}",
            p.length,
            s.optimal
        );
        if s.optimal >= 100.0 {
            excess += p.length / s.optimal - 1.0;
            long += 1;
        }
    }
    assert!(long > 500);
    let mean = excess / long as f64;
    assert!(mean < 0.06, "mean excess {mean}");
}

#[test]
fn a_header_claiming_a_huge_map_is_an_error_not_an_abort() {
    // Tried as a new user would: this aborted the process on a 10 PB allocation before.
    let text = "type octile\nheight 99999999\nwidth 99999999\nmap\n....\n";
    let e = parse_map(text, MoveRules::default()).unwrap_err();
    assert_eq!(e.line, 4, "{e}");
    // Within the grid's limit but with the rows missing: an error about the rows.
    let text = "type octile\nheight 60000\nwidth 60000\nmap\n";
    assert!(parse_map(text, MoveRules::default()).is_err());
    assert!(read_map("/nonexistent/file.map", MoveRules::default()).is_err());
}

/// A real file's text with a few bytes replaced, inserted or removed.
fn mutated(text: &'static str) -> impl Strategy<Value = Vec<u8>> {
    let len = text.len();
    proptest::collection::vec((0..len, any::<u8>(), 0u8..3), 1..8).prop_map(move |edits| {
        let mut bytes = text.as_bytes().to_vec();
        for (at, byte, kind) in edits {
            let at = at.min(bytes.len().saturating_sub(1));
            match kind {
                0 => bytes[at] = byte,
                1 => bytes.insert(at, byte),
                _ => {
                    bytes.remove(at);
                }
            }
        }
        bytes
    })
}

const ARENA_MAP: &str = include_str!("../assets/movingai/maps/dao/arena.map");
const ARENA_SCEN: &str = include_str!("../assets/movingai/scenarios/dao/arena.map.scen");

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    // Every input gives a value or an error, never a panic or an abort.
    #[test]
    fn random_bytes_never_panic_either_loader(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = parse_map(&text, MoveRules::default());
        let _ = parse_scen(&text);
        // With a plausible header in front, the map parser reaches its row checks.
        let _ = parse_map(&format!("type octile\nheight 3\nwidth 4\nmap\n{text}"), MoveRules::default());
        let _ = parse_scen(&format!("version 1\n{text}"));
    }

    #[test]
    fn mutated_real_files_never_panic(map in mutated(ARENA_MAP), scen in mutated(ARENA_SCEN)) {
        let map = String::from_utf8_lossy(&map);
        if let Ok(grid) = parse_map(&map, MoveRules::default()) {
            prop_assert!(grid.width() > 0 && grid.height() > 0);
        }
        let _ = parse_scen(&String::from_utf8_lossy(&scen));
    }
}
