//! A vehicle's legal moves (Pinter's legal turns): the lattice of straights and arcs a vehicle
//! that cannot turn in place may drive from a cell center to another, for each of eight
//! headings, forward and (if it may) in reverse, each with the cells its body sweeps.
//!
//! A turn of 45 or 90 degrees is an arc of exactly the turning radius between two straights
//! (the shortest such curve from a cell center, facing one of the eight headings, to another cell
//! center facing the turned heading); a straight is one step along the heading. A reverse move is
//! a forward move driven backward. Everything is computed once per [`VehicleModel`] from IEEE
//! `+ - * /` and `sqrt` only, so it is the same on every platform (lockstep).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use bevy::math::{IVec2, Vec2};
use bevy::reflect::Reflect;

use super::cost::CostModel;
use super::drive_plan::{DriveSegment, DriveShape, body_cells};

/// The number of headings a vehicle's search knows (counter-clockwise from the x axis, 45
/// degrees apart).
pub const HEADINGS: u8 = 8;

const D: f32 = std::f32::consts::FRAC_1_SQRT_2;

/// The unit vector of heading `h` (taken modulo [`HEADINGS`]).
pub fn heading_vector(h: u8) -> Vec2 {
    const UNITS: [Vec2; 8] = [
        Vec2::new(1.0, 0.0),
        Vec2::new(D, D),
        Vec2::new(0.0, 1.0),
        Vec2::new(-D, D),
        Vec2::new(-1.0, 0.0),
        Vec2::new(-D, -D),
        Vec2::new(0.0, -1.0),
        Vec2::new(D, -D),
    ];
    UNITS[(h % HEADINGS) as usize]
}

/// The cell step of heading `h`.
fn heading_step(h: u8) -> IVec2 {
    const STEPS: [IVec2; 8] = [
        IVec2::new(1, 0),
        IVec2::new(1, 1),
        IVec2::new(0, 1),
        IVec2::new(-1, 1),
        IVec2::new(-1, 0),
        IVec2::new(-1, -1),
        IVec2::new(0, -1),
        IVec2::new(1, -1),
    ];
    STEPS[(h % HEADINGS) as usize]
}

/// The heading nearest the direction `facing` (the x axis for a zero vector; of two equally
/// near, the lower).
pub fn nearest_heading(facing: Vec2) -> u8 {
    let mut best = (f32::NEG_INFINITY, 0);
    for h in 0..HEADINGS {
        let dot = heading_vector(h).dot(facing);
        if dot > best.0 {
            best = (dot, h);
        }
    }
    best.1
}

/// How a vehicle may reverse.
#[derive(Clone, Copy, Debug, PartialEq, Reflect)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
pub struct ReverseRules {
    /// A reversed tile costs this many forward ones (at least 1).
    pub cost_factor: f32,
    /// Changing between forward and reverse costs this many tiles of driving (stopping and
    /// starting again).
    pub switch_cost: f32,
}

impl Default for ReverseRules {
    fn default() -> Self {
        ReverseRules {
            cost_factor: 2.0,
            switch_cost: 2.0,
        }
    }
}

/// What a vehicle's search needs to know of it.
#[derive(Clone, Copy, Debug, PartialEq, Reflect)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
pub struct VehicleRules {
    /// The smallest radius it can turn on, in tiles (more than 0: it never turns in place).
    pub turning_radius: f32,
    /// The radius of its body against the walls, in tiles: a move is legal where the circle of
    /// this radius swept along it overlaps no blocked cell.
    pub body_radius: f32,
    /// Whether and at what cost it may reverse (`None`: never).
    pub reverse: Option<ReverseRules>,
}

impl Default for VehicleRules {
    fn default() -> Self {
        VehicleRules {
            turning_radius: 1.5,
            body_radius: 0.3,
            reverse: Some(ReverseRules::default()),
        }
    }
}

/// Why a [`VehicleModel`] cannot be made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum VehicleError {
    /// The turning radius is not a finite number above 0 and at most 8 tiles.
    TurningRadius(f32),
    /// The body radius is not a finite number from 0 to 2 tiles.
    BodyRadius(f32),
    /// The reverse cost factor is not a finite number of at least 1, or the switch cost is
    /// negative or not finite.
    Reverse,
}

impl std::fmt::Display for VehicleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VehicleError::TurningRadius(r) => {
                write!(f, "turning radius {r} is not in (0, 8] tiles")
            }
            VehicleError::BodyRadius(r) => write!(f, "body radius {r} is not in [0, 2] tiles"),
            VehicleError::Reverse => write!(
                f,
                "reverse cost factor must be at least 1 and switch cost at least 0"
            ),
        }
    }
}

impl std::error::Error for VehicleError {}

/// One legal move of the lattice, from a cell center facing one heading.
#[derive(Clone, Debug)]
pub(crate) struct Move {
    /// The heading it ends facing.
    pub(crate) to_heading: u8,
    /// Driven in reverse.
    pub(crate) reverse: bool,
    /// The cell it ends on, from the one it starts on.
    pub(crate) offset: IVec2,
    /// The cells the body overlaps on the way, from the start cell.
    pub(crate) swept: Vec<IVec2>,
    /// The cells its center line crosses, from the start cell, with the fixed-point cost of its
    /// length in each on normal terrain (reverse and gear changes not included).
    pub(crate) lengths: Vec<(IVec2, u64)>,
    /// Its pieces, from the start cell's center at the origin.
    pub(crate) segments: Vec<DriveSegment>,
}

/// A vehicle's lattice of legal moves, built once for its [`VehicleRules`] and a cost model;
/// cheap to clone (shared).
#[derive(Clone, Debug)]
pub struct VehicleModel {
    rules: VehicleRules,
    costs: CostModel,
    /// The moves from each heading.
    moves: Arc<[Vec<Move>; 8]>,
}

impl PartialEq for VehicleModel {
    fn eq(&self, other: &Self) -> bool {
        self.rules == other.rules && self.costs == other.costs
    }
}

impl VehicleModel {
    /// The moves of a vehicle with `rules`, costed under `costs`.
    pub fn new(rules: VehicleRules, costs: CostModel) -> Result<VehicleModel, VehicleError> {
        let r = rules.turning_radius;
        if !(r.is_finite() && r > 0.0 && r <= 8.0) {
            return Err(VehicleError::TurningRadius(r));
        }
        let b = rules.body_radius;
        if !(b.is_finite() && (0.0..=2.0).contains(&b)) {
            return Err(VehicleError::BodyRadius(b));
        }
        if let Some(rev) = rules.reverse
            && !(rev.cost_factor.is_finite()
                && rev.cost_factor >= 1.0
                && rev.switch_cost.is_finite()
                && rev.switch_cost >= 0.0)
        {
            return Err(VehicleError::Reverse);
        }
        let mut moves: [Vec<Move>; 8] = Default::default();
        for h in 0..HEADINGS {
            for turn in [0i8, 1, -1, 2, -2] {
                let segments = forward_segments(h, turn, r);
                let forward = make_move(h, turn, segments, b, costs);
                if rules.reverse.is_some() {
                    let back = reversed(&forward, h);
                    moves[forward.to_heading as usize].push(back);
                }
                moves[h as usize].push(forward);
            }
        }
        Ok(VehicleModel {
            rules,
            costs,
            moves: Arc::new(moves),
        })
    }

    /// The rules it was built for.
    pub fn rules(&self) -> VehicleRules {
        self.rules
    }

    /// The cost model its moves are costed in.
    pub fn costs(&self) -> CostModel {
        self.costs
    }

    /// The legal moves from a cell center facing heading `h`.
    pub(crate) fn moves(&self, h: u8) -> &[Move] {
        &self.moves[(h % HEADINGS) as usize]
    }
}

/// The pieces of the forward move from heading `h` turning `turn` x 45 degrees (0: one step
/// straight on), from the origin.
fn forward_segments(h: u8, turn: i8, radius: f32) -> Vec<DriveSegment> {
    let u0 = heading_vector(h);
    if turn == 0 {
        let to = heading_step(h).as_vec2();
        return vec![line(Vec2::ZERO, to)];
    }
    let h1 = (h as i8 + turn).rem_euclid(HEADINGS as i8) as u8;
    let u1 = heading_vector(h1);
    let left = turn > 0;
    let n = if left {
        Vec2::new(-u0.y, u0.x)
    } else {
        Vec2::new(u0.y, -u0.x)
    };
    let (sin, one_minus_cos) = if turn.abs() == 1 {
        (D, 1.0 - D)
    } else {
        (1.0, 1.0)
    };
    let chord = (u0 * sin + n * one_minus_cos) * radius;
    // The shortest straight-arc-straight to a cell center: t along u0, the arc, s along u1.
    let det = u0.x * u1.y - u0.y * u1.x;
    let reach = radius.ceil() as i32 + 3;
    let mut best: Option<(f32, f32, f32)> = None;
    for a in -reach..=reach {
        for b in -reach..=reach {
            let v = Vec2::new(a as f32, b as f32) - chord;
            let t = (v.x * u1.y - v.y * u1.x) / det;
            let s = (u0.x * v.y - u0.y * v.x) / det;
            if t < -1e-4 || s < -1e-4 {
                continue;
            }
            let (t, s) = (t.max(0.0), s.max(0.0));
            if best.is_none_or(|(len, ..)| t + s < len - 1e-4) {
                best = Some((t + s, t, s));
            }
        }
    }
    let (_, t, s) = best.expect("a lattice point lies beyond every turn");
    let arc_start = u0 * t;
    let center = arc_start + n * radius;
    let start_angle = angle_of_multiple(arc_start - center, radius);
    let quarter = std::f32::consts::FRAC_PI_4;
    let sweep = quarter * turn.abs() as f32 * if left { 1.0 } else { -1.0 };
    let arc_end = arc_start + chord;
    let mut segments = Vec::new();
    if t > 1e-4 {
        segments.push(line(Vec2::ZERO, arc_start));
    }
    segments.push(DriveSegment {
        shape: DriveShape::Arc {
            center,
            radius,
            start_angle,
            sweep,
        },
        reverse: false,
    });
    if s > 1e-4 {
        segments.push(line(arc_end, arc_end + u1 * s));
    }
    segments
}

/// The angle of `v` (of length `radius`, pointing along one of the eight headings) from the x
/// axis: a multiple of 45 degrees.
fn angle_of_multiple(v: Vec2, radius: f32) -> f32 {
    let h = nearest_heading(v / radius);
    let a = h as f32 * std::f32::consts::FRAC_PI_4;
    if a > std::f32::consts::PI {
        a - std::f32::consts::TAU
    } else {
        a
    }
}

fn line(from: Vec2, to: Vec2) -> DriveSegment {
    DriveSegment {
        shape: DriveShape::Line { from, to },
        reverse: false,
    }
}

/// The forward move from heading `h` along `segments`, with its swept cells for a body of
/// `body` tiles and the costs of its length.
fn make_move(h: u8, turn: i8, segments: Vec<DriveSegment>, body: f32, costs: CostModel) -> Move {
    let to_heading = (h as i8 + turn).rem_euclid(HEADINGS as i8) as u8;
    let end = {
        let last = segments.last().expect("a move has a piece");
        last.pose_at(last.length()).position
    };
    let offset = IVec2::new(end.x.round() as i32, end.y.round() as i32);
    // Sample the center line finely: the start cell's center is (0.5, 0.5) of its cell.
    let mut swept = BTreeSet::new();
    let mut cells = Vec::new();
    let mut lengths: BTreeMap<(i32, i32), f64> = BTreeMap::new();
    let half = Vec2::splat(0.5);
    const STEP: f32 = 0.025;
    for seg in &segments {
        let len = seg.length();
        let n = (len / STEP).ceil().max(1.0) as usize;
        for k in 0..=n {
            let p = seg.pose_at(len * k as f32 / n as f32).position + half;
            cells.clear();
            body_cells(p, body, &mut cells);
            swept.extend(cells.iter().map(|c| (c.x, c.y)));
            if k < n {
                let mid = seg.pose_at(len * (k as f32 + 0.5) / n as f32).position + half;
                let c = (mid.x.floor() as i32, mid.y.floor() as i32);
                *lengths.entry(c).or_default() += (len / n as f32) as f64;
            }
        }
    }
    Move {
        to_heading,
        reverse: false,
        offset,
        swept: swept.into_iter().map(|(x, y)| IVec2::new(x, y)).collect(),
        lengths: lengths
            .into_iter()
            .map(|((x, y), l)| (IVec2::new(x, y), (l * costs.straight as f64).round() as u64))
            .collect(),
        segments,
    }
}

/// `forward` (from heading `from`) driven backward: from its end, facing its end heading, back
/// to its start.
fn reversed(forward: &Move, from: u8) -> Move {
    let back = -forward.offset;
    let shift = back.as_vec2();
    let segments = forward
        .segments
        .iter()
        .rev()
        .map(|seg| seg.reversed().shifted(shift))
        .collect();
    Move {
        to_heading: from,
        reverse: true,
        offset: back,
        swept: forward.swept.iter().map(|&c| c + back).collect(),
        lengths: forward
            .lengths
            .iter()
            .map(|&(c, l)| (c + back, l))
            .collect(),
        segments,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(radius: f32) -> VehicleModel {
        VehicleModel::new(
            VehicleRules {
                turning_radius: radius,
                body_radius: 0.3,
                reverse: Some(ReverseRules::default()),
            },
            CostModel::EXACT,
        )
        .unwrap()
    }

    /// Every move starts at its start cell's center facing its heading, is continuous, never
    /// curves tighter than the turning radius, and ends at its end cell's center facing its end
    /// heading.
    #[test]
    fn every_move_is_a_legal_curve_between_cell_centers() {
        for radius in [0.5, 1.0, 1.5, 2.5, 4.0] {
            let m = model(radius);
            for h in 0..HEADINGS {
                assert_eq!(m.moves(h).len(), 10);
                for mv in m.moves(h) {
                    let first = mv.segments[0].pose_at(0.0);
                    assert!(first.position.length() < 1e-4, "{first:?}");
                    assert!(first.facing.distance(heading_vector(h)) < 1e-4);
                    let mut at = first.position;
                    for seg in &mv.segments {
                        let p = seg.pose_at(0.0);
                        assert!(p.position.distance(at) < 1e-3, "gap in {mv:?}");
                        assert!(p.curvature <= 1.0 / radius + 1e-4);
                        assert_eq!(seg.reverse, mv.reverse);
                        at = seg.pose_at(seg.length()).position;
                        // Facing turns smoothly along it.
                        let mid = seg.pose_at(seg.length() / 2.0);
                        assert!((mid.facing.length() - 1.0).abs() < 1e-4);
                    }
                    assert!(
                        at.distance(mv.offset.as_vec2()) < 1e-3,
                        "{mv:?} ends at {at}"
                    );
                    let last = mv.segments.last().unwrap();
                    let end = last.pose_at(last.length());
                    assert!(end.facing.distance(heading_vector(mv.to_heading)) < 1e-4);
                    assert!(mv.swept.contains(&IVec2::ZERO) && mv.swept.contains(&mv.offset));
                }
            }
        }
    }

    #[test]
    fn a_turn_of_radius_one_and_a_half_from_east_ends_two_right_one_up() {
        let m = model(1.5);
        let left = m
            .moves(0)
            .iter()
            .find(|mv| !mv.reverse && mv.to_heading == 1)
            .unwrap();
        assert_eq!(left.offset, IVec2::new(2, 1));
        let quarter = m
            .moves(0)
            .iter()
            .find(|mv| !mv.reverse && mv.to_heading == 2)
            .unwrap();
        assert_eq!(quarter.offset, IVec2::new(2, 2));
        let back = m
            .moves(1)
            .iter()
            .find(|mv| mv.reverse && mv.to_heading == 0)
            .unwrap();
        assert_eq!(back.offset, IVec2::new(-2, -1));
    }

    #[test]
    fn bad_rules_are_errors() {
        let rules = VehicleRules::default();
        for r in [0.0, -1.0, f32::NAN, 9.0] {
            let bad = VehicleRules {
                turning_radius: r,
                ..rules
            };
            assert!(VehicleModel::new(bad, CostModel::EXACT).is_err());
        }
        let bad = VehicleRules {
            body_radius: -0.1,
            ..rules
        };
        assert_eq!(
            VehicleModel::new(bad, CostModel::EXACT),
            Err(VehicleError::BodyRadius(-0.1))
        );
        let bad = VehicleRules {
            reverse: Some(ReverseRules {
                cost_factor: 0.5,
                switch_cost: 1.0,
            }),
            ..rules
        };
        assert_eq!(
            VehicleModel::new(bad, CostModel::EXACT),
            Err(VehicleError::Reverse)
        );
    }

    #[test]
    fn nearest_heading_rounds_to_the_eight() {
        assert_eq!(nearest_heading(Vec2::new(1.0, 0.1)), 0);
        assert_eq!(nearest_heading(Vec2::new(1.0, 0.9)), 1);
        assert_eq!(nearest_heading(Vec2::new(0.0, -3.0)), 6);
        assert_eq!(nearest_heading(Vec2::ZERO), 0);
    }
}
