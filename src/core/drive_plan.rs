//! A vehicle's plan (Pinter's segment list): straights and arcs, each driven forward or in
//! reverse, and the pose on it at any distance along it.

use bevy::math::Vec2;
use bevy::reflect::Reflect;

use super::cell::Cell;
use super::fmath;

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
    /// The distance along the plan, in tiles, of each of `states` (the first 0): the points a
    /// vehicle can stop at and plan again from.
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
