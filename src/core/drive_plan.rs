//! A vehicle's plan (Pinter's segment list): straights and arcs, each driven forward or in
//! reverse, and the pose on it at any distance along it.

use bevy::math::Vec2;
use bevy::reflect::Reflect;

use super::cell::Cell;
use super::fmath;
use super::grid::NavGrid;

/// Tiles between the points [`DrivePlan::cells_covered`] looks at.
const CHECK_STEP: f32 = 0.1;

/// The shape of one [`DriveSegment`], in grid space (a cell is 1 x 1, cell `(x, y)` spans
/// `x..x + 1`, `y..y + 1`).
#[derive(Clone, Copy, Debug, PartialEq, Reflect)]
pub enum DriveShape {
    /// A straight line.
    Line {
        /// Where it starts.
        from: Vec2,
        /// Where it ends.
        to: Vec2,
    },
    /// An arc of a turning circle.
    Arc {
        /// The circle's center.
        center: Vec2,
        /// The circle's radius (the vehicle's turning radius).
        radius: f32,
        /// The angle of the arc's start around `center`, in radians from the x axis.
        start_angle: f32,
        /// The signed sweep in radians: positive counter-clockwise (x axis toward y axis).
        sweep: f32,
    },
}

/// One piece of a [`DrivePlan`].
#[derive(Clone, Copy, Debug, PartialEq, Reflect)]
pub struct DriveSegment {
    /// Its shape.
    pub shape: DriveShape,
    /// Driven in reverse: the vehicle faces against the way it travels.
    pub reverse: bool,
}

/// Where a vehicle is at a point of its plan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose {
    /// Its position in grid space.
    pub position: Vec2,
    /// The way its front points (unit length).
    pub facing: Vec2,
    /// It is driving in reverse here.
    pub reverse: bool,
    /// The curvature of its way here: 0 on straights, 1 / radius on arcs.
    pub curvature: f32,
}

impl DriveSegment {
    /// The same piece moved by `by`.
    pub fn shifted(self, by: Vec2) -> DriveSegment {
        let shape = match self.shape {
            DriveShape::Line { from, to } => DriveShape::Line {
                from: from + by,
                to: to + by,
            },
            DriveShape::Arc {
                center,
                radius,
                start_angle,
                sweep,
            } => DriveShape::Arc {
                center: center + by,
                radius,
                start_angle,
                sweep,
            },
        };
        DriveSegment { shape, ..self }
    }

    /// The same curve driven the other way round in the other gear: from its end to its start,
    /// facing as this one faces (forward driven backward, or reverse driven forward).
    pub fn reversed(self) -> DriveSegment {
        let shape = match self.shape {
            DriveShape::Line { from, to } => DriveShape::Line { from: to, to: from },
            DriveShape::Arc {
                center,
                radius,
                start_angle,
                sweep,
            } => DriveShape::Arc {
                center,
                radius,
                start_angle: start_angle + sweep,
                sweep: -sweep,
            },
        };
        DriveSegment {
            shape,
            reverse: !self.reverse,
        }
    }

    /// The part of it from `a` to `b` tiles along it (clamped to its ends; `a <= b`).
    pub fn part(self, a: f32, b: f32) -> DriveSegment {
        let len = self.length();
        let (a, b) = (a.clamp(0.0, len), b.clamp(0.0, len));
        let shape = match self.shape {
            DriveShape::Line { .. } => DriveShape::Line {
                from: self.pose_at(a).position,
                to: self.pose_at(b).position,
            },
            DriveShape::Arc {
                center,
                radius,
                start_angle,
                sweep,
            } => {
                let turn = sweep.signum();
                DriveShape::Arc {
                    center,
                    radius,
                    start_angle: start_angle + turn * a / radius,
                    sweep: turn * (b - a) / radius,
                }
            }
        };
        DriveSegment { shape, ..self }
    }

    /// Its length in tiles.
    pub fn length(&self) -> f32 {
        match self.shape {
            DriveShape::Line { from, to } => from.distance(to),
            DriveShape::Arc { radius, sweep, .. } => radius * sweep.abs(),
        }
    }

    /// The pose `s` tiles along it (clamped to its ends).
    pub fn pose_at(&self, s: f32) -> Pose {
        let s = s.clamp(0.0, self.length());
        let (position, travel, curvature) = match self.shape {
            DriveShape::Line { from, to } => {
                let dir = (to - from).normalize_or(Vec2::X);
                (from + dir * s, dir, 0.0)
            }
            DriveShape::Arc {
                center,
                radius,
                start_angle,
                sweep,
            } => {
                let turn = sweep.signum();
                let angle = start_angle + turn * s / radius;
                let radial = fmath::unit_at(angle);
                // The way along a counter-clockwise arc is the radial turned a quarter left.
                let travel = Vec2::new(-radial.y, radial.x) * turn;
                (center + radial * radius, travel, 1.0 / radius)
            }
        };
        Pose {
            position,
            facing: if self.reverse { -travel } else { travel },
            reverse: self.reverse,
            curvature,
        }
    }
}

/// A vehicle's way to its goal: a list of straights and arcs, each legal for its turning radius,
/// forward or in reverse (a three-point turn is a forward arc, a reverse arc and a forward arc).
///
/// Reflected, so a saved game keeps a vehicle's plan: it drives on from where it was.
#[derive(Clone, Debug, Default, PartialEq, Reflect)]
pub struct DrivePlan {
    /// The pieces, from the start to the goal.
    pub segments: Vec<DriveSegment>,
    /// The cells of the search's states, from the start to the goal, with the heading (0-7,
    /// counter-clockwise from the x axis in 45-degree steps) the vehicle faces there.
    pub states: Vec<(Cell, u8)>,
    /// The distance along the plan, in tiles, of each of `states` (the first 0, unless the plan
    /// begins by backing to its first state, see [`DrivePlan::after`]): the points a vehicle can
    /// stop at and plan again from.
    pub distances: Vec<f32>,
    /// The fixed-point cost of the plan (see [`CostModel`](super::CostModel)).
    pub cost: u64,
    /// States expanded by the search.
    pub expansions: u32,
}

impl DrivePlan {
    /// The plan's length in tiles.
    pub fn length(&self) -> f32 {
        self.segments.iter().map(DriveSegment::length).sum()
    }

    /// How many times the vehicle changes between forward and reverse.
    pub fn gear_changes(&self) -> usize {
        self.segments
            .windows(2)
            .filter(|w| w[0].reverse != w[1].reverse)
            .count()
    }

    /// Whether any piece is driven in reverse.
    pub fn reverses(&self) -> bool {
        self.segments.iter().any(|s| s.reverse)
    }

    /// The first distance along the plan, from `from` on, at which a round body of `radius`
    /// overlaps a blocked cell of `grid`: where a plan made before the grid was edited stops
    /// being drivable. `None`: clear to its end. (To check one plan after many edits, keep its
    /// [`DrivePlan::cells_covered`].)
    pub fn first_blocked(&self, grid: &NavGrid, from: f32, radius: f32) -> Option<f32> {
        self.cells_covered(radius).first_blocked(grid, from)
    }

    /// The cells a round body of `radius` overlaps driving the plan (looked at every tenth of a
    /// tile and at each piece's ends), each with the stretch of the plan it does over.
    pub fn cells_covered(&self, radius: f32) -> PlanCells {
        let mut spans: Vec<(Cell, f32, f32)> = Vec::new();
        let mut start = 0.0;
        let mut cells = Vec::new();
        for seg in &self.segments {
            let len = seg.length();
            let mut s = 0.0;
            loop {
                let along = start + s;
                cells.clear();
                body_cells(seg.pose_at(s).position, radius, &mut cells);
                for &c in &cells {
                    // A cell covered now was most likely covered a moment ago: look back a few.
                    match spans.iter_mut().rev().take(12).find(|(k, ..)| *k == c) {
                        Some(span) => span.2 = along,
                        None => spans.push((c, along, along)),
                    }
                }
                if s >= len {
                    break;
                }
                s = (s + CHECK_STEP).min(len);
            }
            start += len;
        }
        PlanCells { spans }
    }

    /// The last of `states` at or before `along` (`None` before the first).
    pub fn state_before(&self, along: f32) -> Option<usize> {
        self.distances.iter().rposition(|&d| d <= along + 1e-4)
    }

    /// The pieces that drive back from `along` to [`DrivePlan::state_before`] it, the way the
    /// vehicle came, in the other gear (none where `along` is at a state, or before the first).
    pub fn back_to_state(&self, along: f32) -> Vec<DriveSegment> {
        let Some(k) = self.state_before(along) else {
            return Vec::new();
        };
        let from = self.distances[k];
        let mut back = Vec::new();
        let mut start = 0.0;
        for seg in &self.segments {
            let len = seg.length();
            let (a, b) = ((from - start).max(0.0), (along - start).min(len));
            if b - a > 1e-4 {
                back.push(seg.part(a, b).reversed());
            }
            start += len;
        }
        back.reverse();
        back
    }

    /// This plan with `first` driven before it (pieces ending where it begins): the states keep
    /// their places, further along by the length of `first`.
    pub fn after(mut self, first: Vec<DriveSegment>) -> DrivePlan {
        let extra: f32 = first.iter().map(DriveSegment::length).sum();
        for d in &mut self.distances {
            *d += extra;
        }
        self.segments.splice(0..0, first);
        self
    }

    /// The pose `s` tiles along the plan (clamped to its ends); `None` for an empty plan.
    pub fn pose_at(&self, s: f32) -> Option<Pose> {
        let mut left = s.max(0.0);
        for seg in &self.segments {
            let len = seg.length();
            if left <= len {
                return Some(seg.pose_at(left));
            }
            left -= len;
        }
        self.segments.last().map(|seg| seg.pose_at(seg.length()))
    }
}

/// The cells a body driving a [`DrivePlan`] overlaps ([`DrivePlan::cells_covered`]), each with
/// the stretch of the plan over which it does: checking a plan against an edited grid reads a
/// few cells a tile instead of sampling the body again.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlanCells {
    /// Each cell (a cell the body leaves and comes back to may be listed twice), with the first
    /// and last distance along the plan at which the body overlaps it.
    spans: Vec<(Cell, f32, f32)>,
}

impl PlanCells {
    /// The first distance along the plan, from `from` on, at which the body overlaps a cell
    /// `grid` has blocked (or off the grid); `None`: clear to the plan's end.
    pub fn first_blocked(&self, grid: &NavGrid, from: f32) -> Option<f32> {
        self.spans
            .iter()
            .filter(|&&(c, _, last)| last >= from && !grid.is_walkable(c))
            .map(|&(_, first, _)| first.max(from))
            .min_by(f32::total_cmp)
    }
}

/// Adds the cells a round body of `radius` at `p` overlaps (closer than `radius` to `p`; the
/// cell `p` is in always, cell `(x, y)` spanning `x..x + 1`, `y..y + 1`).
pub(crate) fn body_cells(p: Vec2, radius: f32, out: &mut Vec<Cell>) {
    let (x0, x1) = ((p.x - radius).floor() as i32, (p.x + radius).floor() as i32);
    let (y0, y1) = ((p.y - radius).floor() as i32, (p.y + radius).floor() as i32);
    for y in y0..=y1 {
        for x in x0..=x1 {
            let corner = Vec2::new(x as f32, y as f32);
            let nearest = p.clamp(corner, corner + Vec2::ONE);
            let inside = corner.cmple(p).all() && p.cmplt(corner + Vec2::ONE).all();
            if inside || nearest.distance_squared(p) < radius * radius {
                out.push(Cell::new(x, y));
            }
        }
    }
}
