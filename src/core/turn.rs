//! Turning-radius geometry (Pinter): from a position and heading to a target point, the shortest
//! legal curve is an arc on the left or right turning circle followed by a straight line.

use bevy::math::Vec2;

use super::fmath;

/// An arc on a turning circle then a straight line to the target (Pinter's P, Q construction).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TurnPlan {
    /// Start position.
    pub start: Vec2,
    /// Center of the turning circle (P); unused when `radius` is 0.
    pub center: Vec2,
    /// Turning radius (0: turn in place, then go straight).
    pub radius: f32,
    /// Angle of `start` around `center`.
    pub start_angle: f32,
    /// Signed sweep of the arc in radians (positive: counter-clockwise / left).
    pub sweep: f32,
    /// The tangent point (Q) where the arc meets the line.
    pub tangent: Vec2,
    /// The target.
    pub target: Vec2,
    /// Heading after turning in place (when `radius` is 0).
    pub line_heading: Vec2,
}

fn wrap_positive(a: f32) -> f32 {
    a.rem_euclid(std::f32::consts::TAU)
}

impl TurnPlan {
    /// The shorter of the left and right arc-then-line curves from `start` heading `heading`
    /// (normalised) to `target` with turning `radius`; `None` if the target lies inside both
    /// turning circles (no such curve exists: use a tighter radius or turn in place).
    pub fn new(start: Vec2, heading: Vec2, target: Vec2, radius: f32) -> Option<TurnPlan> {
        let heading = heading.try_normalize().unwrap_or(Vec2::X);
        if radius <= 0.0 {
            return Some(Self::in_place(start, target));
        }
        let mut best: Option<(f32, TurnPlan)> = None;
        for left in [true, false] {
            let normal = if left {
                heading.perp()
            } else {
                -heading.perp()
            };
            let center = start + normal * radius;
            let to_target = target - center;
            let d = to_target.length();
            if d < radius {
                continue;
            }
            let phi = fmath::atan2(to_target.y, to_target.x);
            let alpha = fmath::acos((radius / d).clamp(-1.0, 1.0));
            let theta = if left { phi - alpha } else { phi + alpha };
            let rel = start - center;
            let theta0 = fmath::atan2(rel.y, rel.x);
            let sweep = if left {
                wrap_positive(theta - theta0)
            } else {
                -wrap_positive(theta0 - theta)
            };
            let tangent = center + fmath::unit_at(theta) * radius;
            let plan = TurnPlan {
                start,
                center,
                radius,
                start_angle: theta0,
                sweep,
                tangent,
                target,
                line_heading: (target - tangent).normalize_or_zero(),
            };
            let len = plan.length();
            if best.is_none_or(|(b, _)| len < b) {
                best = Some((len, plan));
            }
        }
        best.map(|(_, p)| p)
    }

    /// Turn in place toward `target`, then go straight.
    pub fn in_place(start: Vec2, target: Vec2) -> TurnPlan {
        TurnPlan {
            start,
            center: start,
            radius: 0.0,
            start_angle: 0.0,
            sweep: 0.0,
            tangent: start,
            target,
            line_heading: (target - start).try_normalize().unwrap_or(Vec2::X),
        }
    }

    /// Length of the arc.
    pub fn arc_length(&self) -> f32 {
        self.radius * self.sweep.abs()
    }

    /// Total length (arc then line).
    pub fn length(&self) -> f32 {
        self.arc_length() + self.tangent.distance(self.target)
    }

    /// Position and heading after travelling `distance` along the plan (Pinter's Listing 2),
    /// clamped to the target.
    pub fn sample(&self, distance: f32) -> (Vec2, Vec2) {
        let arc = self.arc_length();
        if distance < arc && self.radius > 0.0 {
            let a = self.start_angle + self.sweep.signum() * distance / self.radius;
            let radial = fmath::unit_at(a);
            let pos = self.center + radial * self.radius;
            let heading = if self.sweep >= 0.0 {
                radial.perp()
            } else {
                -radial.perp()
            };
            (pos, heading)
        } else {
            let along = (distance - arc).clamp(0.0, self.tangent.distance(self.target));
            (self.tangent + self.line_heading * along, self.line_heading)
        }
    }

    /// Points along the plan every `step` units (for obstacle checks).
    pub fn sample_points(&self, step: f32) -> impl Iterator<Item = Vec2> + '_ {
        let len = self.length();
        let n = (len / step.max(1e-3)).ceil().max(1.0) as u32;
        (0..=n).map(move |k| self.sample(len * k as f32 / n as f32).0)
    }
}
