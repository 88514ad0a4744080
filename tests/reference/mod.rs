//! The reference the property tests hold the searches to: step costs written from the move
//! rules alone (not the library's `step_cost` or `can_step`), a textbook Dijkstra over them and
//! over links' crossings, and random grids.

#![allow(dead_code)]

use std::collections::BinaryHeap;

use bevy_tilepath::core::*;
use proptest::prelude::*;

/// The cost of one step, written from the move rules alone (not the library's `step_cost` or
/// `can_step`): `None` for a move the rules do not allow. Squares: four-way moves one cell along
/// a row or column; eight-way ones also diagonally, past walls only as the corner rule says.
/// Hexagons: the six axial neighbours. A step costs the move's length (straight or diagonal) in
/// the grid's cost model times the terrain of the cell it enters, plus that cell's penalty.
pub fn rule_step(grid: &NavGrid, from: Cell, to: Cell) -> Option<u64> {
    let open = |c: Cell| grid.terrain(c).is_ok_and(|t| t != BLOCKED);
    let (dx, dy) = (to.x - from.x, to.y - from.y);
    let rules = grid.rules();
    let diagonal = match rules.topology {
        Topology::Four => {
            if dx.abs() + dy.abs() != 1 {
                return None;
            }
            false
        }
        Topology::Eight => {
            if dx.abs().max(dy.abs()) != 1 {
                return None;
            }
            let diagonal = dx != 0 && dy != 0;
            if diagonal {
                let (a, b) = (open(from + Cell::new(dx, 0)), open(from + Cell::new(0, dy)));
                let allowed = match rules.corner_rule {
                    CornerRule::NoCutting => a && b,
                    CornerRule::AllowCutting => a || b,
                };
                if !allowed {
                    return None;
                }
            }
            diagonal
        }
        Topology::Hex => {
            let six = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, -1), (-1, 1)];
            if !six.contains(&(dx, dy)) {
                return None;
            }
            false
        }
    };
    if !open(from) || !open(to) {
        return None;
    }
    let length = if diagonal {
        rules.costs.diagonal
    } else {
        rules.costs.straight
    };
    let terrain = grid.terrain(to).ok()? as u64;
    Some(length as u64 * terrain + grid.penalty(to).ok()? as u64)
}

/// Reference: textbook Dijkstra over [`rule_step`]; returns the cost to every cell.
pub fn reference_costs(grid: &NavGrid, start: Cell) -> Vec<Option<u64>> {
    reference_costs_with(grid, start, &[])
}

/// The crossings of `links` written from their fields alone: an open link between walkable
/// cells that needs no key or one the grid holds ([`NavGrid::held_keys`]) is crossed from `from` to `to` (and back if two-way) at its cost in tiles times the
/// straight step's cost, rounded, plus the penalty of the cell it lands on.
pub fn link_steps(grid: &NavGrid, links: &[Link]) -> Vec<(Cell, Cell, u64)> {
    let open = |c: Cell| grid.terrain(c).is_ok_and(|t| t != BLOCKED);
    let straight = grid.rules().costs.straight as f64;
    let mut steps = Vec::new();
    for l in links
        .iter()
        .filter(|l| l.open && open(l.from) && open(l.to))
        .filter(|l| l.keys.is_empty() || l.keys.0 & grid.held_keys().0 != 0)
    {
        let cost = (l.cost as f64 * straight).round() as u64;
        steps.push((l.from, l.to, cost + grid.penalty(l.to).unwrap() as u64));
        if l.two_way {
            steps.push((l.to, l.from, cost + grid.penalty(l.from).unwrap() as u64));
        }
    }
    steps
}

/// Reference: textbook Dijkstra over [`rule_step`] and the `extra` steps (from, to, cost);
/// returns the cost to every cell.
pub fn reference_costs_with(
    grid: &NavGrid,
    start: Cell,
    extra: &[(Cell, Cell, u64)],
) -> Vec<Option<u64>> {
    let w = grid.width() as i32;
    let idx = |c: Cell| (c.y * w + c.x) as usize;
    let mut dist = vec![None; (grid.width() * grid.height()) as usize];
    let mut heap = BinaryHeap::new();
    dist[idx(start)] = Some(0u64);
    heap.push(std::cmp::Reverse((0u64, start.x, start.y)));
    while let Some(std::cmp::Reverse((d, x, y))) = heap.pop() {
        let c = Cell::new(x, y);
        if dist[idx(c)] != Some(d) {
            continue;
        }
        let moves = (-1..=1).flat_map(|dy| (-1..=1).map(move |dx| Cell::new(dx, dy)));
        let steps = moves.filter_map(|m| Some((c + m, rule_step(grid, c, c + m)?)));
        let crossings = extra
            .iter()
            .filter(|&&(from, _, _)| from == c)
            .map(|&(_, to, cost)| (to, cost));
        for (n, step) in steps.chain(crossings) {
            let nd = d + step;
            if dist[idx(n)].is_none_or(|old| nd < old) {
                dist[idx(n)] = Some(nd);
                heap.push(std::cmp::Reverse((nd, n.x, n.y)));
            }
        }
    }
    dist
}

/// Random move rules: every topology, both corner rules, both cost models.
pub fn rules_strategy() -> impl Strategy<Value = MoveRules> {
    (0..4u8, any::<bool>()).prop_map(|(k, lester)| MoveRules {
        topology: match k {
            0 => Topology::Four,
            3 => Topology::Hex,
            _ => Topology::Eight,
        },
        corner_rule: if k == 2 {
            CornerRule::AllowCutting
        } else {
            CornerRule::NoCutting
        },
        costs: if lester {
            CostModel::LESTER
        } else {
            CostModel::EXACT
        },
    })
}

/// Random grids up to 13 x 13 of random terrain (a quarter blocked) and penalties.
pub fn grid_strategy() -> impl Strategy<Value = (NavGrid, Vec<u32>)> {
    (2u32..14, 2u32..14, rules_strategy()).prop_flat_map(|(w, h, rules)| {
        let n = (w * h) as usize;
        (
            proptest::collection::vec(
                prop_oneof![3 => Just(0u8), 6 => Just(1u8), 2 => 2u8..6, 1 => Just(20u8)],
                n,
            ),
            proptest::collection::vec(prop_oneof![8 => Just(0u32), 1 => 0u32..50_000], n),
        )
            .prop_map(move |(terrain, penalties)| {
                let mut g = NavGrid::from_terrain(w, h, rules, &terrain).unwrap();
                for (i, &p) in penalties.iter().enumerate() {
                    let c = Cell::new(i as i32 % w as i32, i as i32 / w as i32);
                    g.set_penalty(c, p).unwrap();
                }
                (g, penalties)
            })
    })
}

/// The heuristics admissible for `rules`.
pub fn admissible(rules: MoveRules) -> Vec<Heuristic> {
    let mut hs = vec![
        Heuristic::Octile,
        Heuristic::Euclidean,
        Heuristic::Chebyshev,
        Heuristic::Zero,
    ];
    if rules.topology != Topology::Eight {
        hs.push(Heuristic::Manhattan);
    }
    // Octile with Lester's 14 > 10 * sqrt 2 diagonals is still a lower bound of 10/14 costs.
    hs
}
