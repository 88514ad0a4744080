//! Local avoidance: optimal reciprocal collision avoidance (ORCA; van den Berg, Guy, Lin and
//! Manocha, "Reciprocal n-Body Collision Avoidance", 2011), the method of the RVO2 library.
//!
//! Each unit picks, every frame, the velocity closest to the one it prefers (along its path)
//! among those that cannot collide with any neighbour within a time horizon, assuming each
//! neighbour takes half of the responsibility for avoiding it. Every neighbour gives one
//! half-plane of allowed velocities; the velocity is found with the small 2D linear programs
//! of RVO2 (incremental, expected linear time), and when the half-planes leave nothing, the
//! velocity that violates them least. Walls are the blocked cells near the unit, each its
//! nearest point taken as a static obstacle the unit avoids alone; their half-planes are never
//! relaxed.
//!
//! Positions and radii are in tiles, velocities in tiles per second. Pure: no ECS.

use bevy::math::Vec2;

use super::cell::Cell;
use super::grid::NavGrid;

/// A body for avoidance: where it is, how fast it goes, how big it is (tiles, tiles/s).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Body {
    /// Center, in grid space (tiles).
    pub position: Vec2,
    /// Current velocity (tiles per second).
    pub velocity: Vec2,
    /// Radius (tiles).
    pub radius: f32,
}

/// How far ahead avoidance looks, and the unit's limits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AvoidanceParams {
    /// Seconds ahead within which no collision with another unit may happen.
    pub time_horizon: f32,
    /// Seconds ahead within which no collision with a wall may happen (shorter: walls do not
    /// move, and a long horizon makes units shy of them).
    pub obstacle_time_horizon: f32,
    /// The unit's top speed (tiles per second).
    pub max_speed: f32,
    /// The frame's time step (seconds): bodies already overlapping push apart within it.
    pub time_step: f32,
}

impl Default for AvoidanceParams {
    fn default() -> Self {
        AvoidanceParams {
            time_horizon: 1.5,
            obstacle_time_horizon: 0.5,
            max_speed: 4.0,
            time_step: 1.0 / 60.0,
        }
    }
}

/// A half-plane of velocities: those to the left of `direction` through `point`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Line {
    point: Vec2,
    direction: Vec2,
}

const EPSILON: f32 = 1e-5;

fn det(a: Vec2, b: Vec2) -> f32 {
    a.x * b.y - a.y * b.x
}

/// The velocity `me` takes: the one nearest `preferred` (at most `max_speed`) that keeps clear of
/// every body in `neighbours` for the time horizon, sharing the effort with them, and of the
/// points in `walls` (nearest points of blocked cells, see [`wall_points`]) for the obstacle
/// horizon. Neighbours further than their horizon's reach change nothing. Like every ORCA, it
/// can hold units in an equilibrium: bodies that touch get half-planes that push them apart
/// within a time step, which no velocity within the top speed satisfies, and the least bad
/// velocity ignores `preferred` (eight units crossing a circle through its center, or four
/// meeting at a crossroads, jam there without overlapping). The caller decides what a stalled
/// unit does.
///
/// ```
/// use bevy::math::Vec2;
/// use bevy_tilepath::core::{AvoidanceParams, Body, avoid_velocity};
///
/// let me = Body { position: Vec2::ZERO, velocity: Vec2::X, radius: 0.4 };
/// let other = Body { position: Vec2::new(2.0, 0.0), velocity: -Vec2::X, radius: 0.4 };
/// let v = avoid_velocity(&me, Vec2::X, &[other], &[], &AvoidanceParams::default());
/// assert!(v.y.abs() > 0.01, "head-on: it turns aside");
/// let alone = avoid_velocity(&me, Vec2::X, &[], &[], &AvoidanceParams::default());
/// assert_eq!(alone, Vec2::X);
/// ```
pub fn avoid_velocity(
    me: &Body,
    preferred: Vec2,
    neighbours: &[Body],
    walls: &[Vec2],
    params: &AvoidanceParams,
) -> Vec2 {
    let mut lines = Vec::with_capacity(walls.len() + neighbours.len());
    for &wall in walls {
        if let Some(line) = wall_line(me, wall, params) {
            lines.push(line);
        }
    }
    let fixed = lines.len();
    for other in neighbours {
        lines.push(neighbour_line(me, other, params));
    }
    let mut result = Vec2::ZERO;
    let failed = program2(&lines, params.max_speed, preferred, false, &mut result);
    if failed < lines.len() {
        program3(&lines, fixed, failed, params.max_speed, &mut result);
    }
    result
}

/// The nearest point of every blocked cell (and of the grid's outside) within `reach` tiles of
/// `position` (grid space), nearest first: the walls [`avoid_velocity`] keeps clear of.
pub fn wall_points(grid: &NavGrid, position: Vec2, reach: f32) -> Vec<Vec2> {
    if grid.is_hex() {
        let mut points = super::hex::wall_points(|c| grid.is_walkable(c), position, reach);
        sort_nearest_first(&mut points, position);
        return points;
    }
    let (lo, hi) = (
        (position - reach).floor().as_ivec2(),
        (position + reach).floor().as_ivec2(),
    );
    let mut points = Vec::new();
    for y in lo.y..=hi.y {
        for x in lo.x..=hi.x {
            let cell = Cell::new(x, y);
            if grid.is_walkable(cell) {
                continue;
            }
            let min = cell.as_vec2();
            let nearest = position.clamp(min, min + Vec2::ONE);
            if nearest.distance_squared(position) <= reach * reach {
                points.push(nearest);
            }
        }
    }
    sort_nearest_first(&mut points, position);
    points
}

fn sort_nearest_first(points: &mut [Vec2], position: Vec2) {
    points.sort_by(|a, b| {
        a.distance_squared(position)
            .total_cmp(&b.distance_squared(position))
    });
}

/// The half-plane keeping `me` clear of `other`, half of the effort being `me`'s.
fn neighbour_line(me: &Body, other: &Body, params: &AvoidanceParams) -> Line {
    let relative_position = other.position - me.position;
    let relative_velocity = me.velocity - other.velocity;
    let dist_sq = relative_position.length_squared();
    let combined = me.radius + other.radius;
    let combined_sq = combined * combined;
    let inv_horizon = 1.0 / params.time_horizon;
    let (direction, u) = if dist_sq > combined_sq {
        // The cut-off circle's center at relative_position / horizon.
        let w = relative_velocity - relative_position * inv_horizon;
        let w_len_sq = w.length_squared();
        let dot = w.dot(relative_position);
        if dot < 0.0 && dot * dot > combined_sq * w_len_sq {
            // Nearest to the cut-off circle.
            let w_len = w_len_sq.sqrt();
            let unit = w / w_len;
            (
                Vec2::new(unit.y, -unit.x),
                unit * (combined * inv_horizon - w_len),
            )
        } else {
            // Nearest to a leg of the cone.
            let leg = (dist_sq - combined_sq).sqrt();
            let direction = if det(relative_position, w) > 0.0 {
                Vec2::new(
                    relative_position.x * leg - relative_position.y * combined,
                    relative_position.x * combined + relative_position.y * leg,
                ) / dist_sq
            } else {
                -Vec2::new(
                    relative_position.x * leg + relative_position.y * combined,
                    -relative_position.x * combined + relative_position.y * leg,
                ) / dist_sq
            };
            let u = direction * relative_velocity.dot(direction) - relative_velocity;
            (direction, u)
        }
    } else {
        // Already overlapping: get apart within this time step.
        let inv_step = 1.0 / params.time_step;
        let w = relative_velocity - relative_position * inv_step;
        let w_len = w.length().max(EPSILON);
        let unit = w / w_len;
        (
            Vec2::new(unit.y, -unit.x),
            unit * (combined * inv_step - w_len),
        )
    };
    Line {
        point: me.velocity + u * 0.5,
        direction,
    }
}

/// The half-plane keeping `me` clear of the static point `wall` (all the effort `me`'s), if it
/// is within reach of the obstacle horizon.
fn wall_line(me: &Body, wall: Vec2, params: &AvoidanceParams) -> Option<Line> {
    let still = Body {
        position: wall,
        velocity: Vec2::ZERO,
        radius: 0.0,
    };
    let reach = me.radius + params.max_speed * params.obstacle_time_horizon;
    if wall.distance_squared(me.position) > reach * reach {
        return None;
    }
    let horizon = AvoidanceParams {
        time_horizon: params.obstacle_time_horizon,
        ..*params
    };
    let half = neighbour_line(me, &still, &horizon);
    // The whole correction, not half: a wall does not move aside.
    Some(Line {
        point: me.velocity + (half.point - me.velocity) * 2.0,
        direction: half.direction,
    })
}

/// On line `k`, the point nearest `target` (or furthest along it, with `direction`) within
/// speed `radius` and the half-planes before it; `false` if there is none.
fn program1(
    lines: &[Line],
    k: usize,
    radius: f32,
    target: Vec2,
    direction: bool,
    result: &mut Vec2,
) -> bool {
    let line = lines[k];
    let dot = line.point.dot(line.direction);
    let discriminant = dot * dot + radius * radius - line.point.length_squared();
    if discriminant < 0.0 {
        return false;
    }
    let root = discriminant.sqrt();
    let (mut left, mut right) = (-dot - root, -dot + root);
    for other in &lines[..k] {
        let denominator = det(line.direction, other.direction);
        let numerator = det(other.direction, line.point - other.point);
        if denominator.abs() <= EPSILON {
            if numerator < 0.0 {
                return false;
            }
            continue;
        }
        let t = numerator / denominator;
        if denominator >= 0.0 {
            right = right.min(t);
        } else {
            left = left.max(t);
        }
        if left > right {
            return false;
        }
    }
    let t = if direction {
        if target.dot(line.direction) > 0.0 {
            right
        } else {
            left
        }
    } else {
        line.direction.dot(target - line.point).clamp(left, right)
    };
    *result = line.point + line.direction * t;
    true
}

/// The velocity within speed `radius` nearest `target` (or furthest along it) satisfying every
/// half-plane; returns the index of the first it could not satisfy (`lines.len()` if none).
fn program2(
    lines: &[Line],
    radius: f32,
    target: Vec2,
    direction: bool,
    result: &mut Vec2,
) -> usize {
    *result = if direction {
        target * radius
    } else if target.length_squared() > radius * radius {
        target.normalize() * radius
    } else {
        target
    };
    for k in 0..lines.len() {
        if det(lines[k].direction, lines[k].point - *result) > 0.0 {
            let before = *result;
            if !program1(lines, k, radius, target, direction, result) {
                *result = before;
                return k;
            }
        }
    }
    lines.len()
}

/// No velocity satisfies every half-plane: the one that violates the unit ones (from `begin`
/// on) least, the first `fixed` (walls) kept.
fn program3(lines: &[Line], fixed: usize, begin: usize, radius: f32, result: &mut Vec2) {
    let mut distance = 0.0;
    for i in begin..lines.len() {
        if det(lines[i].direction, lines[i].point - *result) <= distance {
            continue;
        }
        let mut projected: Vec<Line> = lines[..fixed].to_vec();
        for j in fixed..i {
            let d = det(lines[i].direction, lines[j].direction);
            let point = if d.abs() <= EPSILON {
                if lines[i].direction.dot(lines[j].direction) > 0.0 {
                    continue;
                }
                (lines[i].point + lines[j].point) * 0.5
            } else {
                lines[i].point
                    + lines[i].direction
                        * (det(lines[j].direction, lines[i].point - lines[j].point) / d)
            };
            projected.push(Line {
                point,
                direction: (lines[j].direction - lines[i].direction).normalize_or_zero(),
            });
        }
        let before = *result;
        let target = Vec2::new(-lines[i].direction.y, lines[i].direction.x);
        if program2(&projected, radius, target, true, result) < projected.len() {
            *result = before;
        }
        distance = det(lines[i].direction, lines[i].point - *result);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Steps bodies at their avoidance velocities toward their goals; the closest any two came
    /// (center distance minus the sum of radii) and whether each reached its goal.
    fn simulate(
        bodies: &mut [Body],
        goals: &[Vec2],
        grid: Option<&NavGrid>,
        frames: usize,
    ) -> (f32, Vec<bool>) {
        let params = AvoidanceParams::default();
        let mut closest = f32::MAX;
        for _ in 0..frames {
            let next: Vec<Vec2> = (0..bodies.len())
                .map(|i| {
                    let me = bodies[i];
                    let to_goal = goals[i] - me.position;
                    let preferred = to_goal.clamp_length_max(params.max_speed);
                    let others: Vec<Body> = (0..bodies.len())
                        .filter(|&j| j != i)
                        .map(|j| bodies[j])
                        .collect();
                    let walls = grid.map_or(Vec::new(), |g| wall_points(g, me.position, 2.0));
                    avoid_velocity(&me, preferred, &others, &walls, &params)
                })
                .collect();
            for (b, v) in bodies.iter_mut().zip(next) {
                b.velocity = v;
                b.position += v * params.time_step;
            }
            for i in 0..bodies.len() {
                for j in i + 1..bodies.len() {
                    let gap = bodies[i].position.distance(bodies[j].position)
                        - bodies[i].radius
                        - bodies[j].radius;
                    closest = closest.min(gap);
                }
            }
        }
        let reached = bodies
            .iter()
            .zip(goals)
            .map(|(b, g)| b.position.distance(*g) < 0.2)
            .collect();
        (closest, reached)
    }

    fn body(x: f32, y: f32) -> Body {
        Body {
            position: Vec2::new(x, y),
            velocity: Vec2::ZERO,
            radius: 0.35,
        }
    }

    #[test]
    fn alone_it_keeps_its_preferred_velocity_up_to_its_top_speed() {
        let params = AvoidanceParams::default();
        let me = body(0.0, 0.0);
        assert_eq!(
            avoid_velocity(&me, Vec2::new(1.0, 2.0), &[], &[], &params),
            Vec2::new(1.0, 2.0)
        );
        let fast = avoid_velocity(&me, Vec2::new(30.0, 0.0), &[], &[], &params);
        assert!((fast.length() - params.max_speed).abs() < 1e-4);
    }

    #[test]
    fn two_units_head_on_pass_without_touching() {
        let mut bodies = [body(0.0, 0.0), body(8.0, 0.02)];
        let goals = [Vec2::new(8.0, 0.0), Vec2::new(0.0, 0.0)];
        let (closest, reached) = simulate(&mut bodies, &goals, None, 600);
        assert!(closest > -0.01, "overlapped by {}", -closest);
        assert_eq!(reached, vec![true, true]);
    }

    #[test]
    fn eight_units_crossing_a_circle_never_overlap() {
        let mut bodies: Vec<Body> = (0..8)
            .map(|k| {
                let a = k as f32 * std::f32::consts::TAU / 8.0;
                body(5.0 * a.cos(), 5.0 * a.sin())
            })
            .collect();
        let goals: Vec<Vec2> = bodies.iter().map(|b| -b.position).collect();
        let (closest, _) = simulate(&mut bodies, &goals, None, 1200);
        // Collision-free; an exactly symmetric jam in the middle is ORCA's known equilibrium
        // (the movement layer's crowd rules take over there).
        assert!(closest > -0.02, "overlapped by {}", -closest);
    }

    /// ORCA's guarantee: two units that each take their avoidance velocity (from their current
    /// ones) cannot collide within the time horizon moving straight at them.
    #[test]
    fn reciprocal_velocities_are_collision_free_within_the_horizon() {
        let params = AvoidanceParams::default();
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        };
        let mut checked = 0;
        for _ in 0..2000 {
            let a = Body {
                position: Vec2::ZERO,
                velocity: Vec2::new(rnd(), rnd()) * 3.0,
                radius: 0.35,
            };
            let b = Body {
                position: Vec2::new(rnd(), rnd()) * 4.0,
                velocity: Vec2::new(rnd(), rnd()) * 3.0,
                radius: 0.35,
            };
            if a.position.distance(b.position) < 0.75 {
                continue;
            }
            let (pa, pb) = (Vec2::new(rnd(), rnd()) * 4.0, Vec2::new(rnd(), rnd()) * 4.0);
            let va = avoid_velocity(&a, pa, &[b], &[], &params);
            let vb = avoid_velocity(&b, pb, &[a], &[], &params);
            // Closest approach of the relative motion within the horizon.
            let (p, v) = (b.position - a.position, vb - va);
            let t = (-p.dot(v) / v.length_squared().max(1e-9)).clamp(0.0, params.time_horizon);
            let closest = (p + v * t).length();
            assert!(
                closest >= 0.7 - 1e-3,
                "{a:?} {b:?}: {va} {vb} come to {closest}"
            );
            checked += 1;
        }
        assert!(checked > 1000);
    }

    /// A unit already moving clear of its neighbours (for the horizon, with room to spare)
    /// keeps its velocity: avoidance takes away only what it must.
    #[test]
    fn velocities_already_clear_are_kept() {
        let params = AvoidanceParams::default();
        let mut kept = 0;
        for k in 0..360 {
            let a = Vec2::from_angle((k as f32).to_radians());
            let me = Body {
                position: Vec2::ZERO,
                velocity: a * 2.0,
                radius: 0.35,
            };
            let other = Body {
                position: Vec2::new(2.0, 0.0),
                velocity: Vec2::ZERO,
                radius: 0.35,
            };
            // Closest approach of the straight motion within the horizon, with a margin.
            let t = (other.position.dot(me.velocity) / me.velocity.length_squared())
                .clamp(0.0, params.time_horizon);
            if (me.velocity * t - other.position).length() < 0.7 + 0.3 {
                continue;
            }
            let v = avoid_velocity(&me, me.velocity, &[other], &[], &params);
            assert!(
                v.distance(me.velocity) < 1e-4,
                "heading {k}: {v} instead of {}",
                me.velocity
            );
            kept += 1;
        }
        assert!(kept > 200, "{kept}");
    }

    #[test]
    fn a_unit_driven_into_a_wall_stops_at_it() {
        let mut grid = NavGrid::new(10, 10).unwrap();
        for y in 0..10 {
            grid.set_walkable(Cell::new(5, y), false).unwrap();
        }
        let mut bodies = [body(2.5, 4.5)];
        let goals = [Vec2::new(8.5, 4.5)];
        simulate(&mut bodies, &goals, Some(&grid), 300);
        let b = bodies[0];
        assert!(b.position.x + b.radius <= 5.0 + 1e-3, "{:?}", b.position);
        assert!(b.position.x > 3.5, "it still got close: {:?}", b.position);
    }

    #[test]
    fn wall_points_are_the_nearest_points_of_blocked_cells_within_reach() {
        let mut grid = NavGrid::new(6, 6).unwrap();
        grid.set_walkable(Cell::new(3, 2), false).unwrap();
        let points = wall_points(&grid, Vec2::new(2.5, 2.5), 1.0);
        assert_eq!(points, vec![Vec2::new(3.0, 2.5)]);
        // The grid's outside is a wall too.
        let edge = wall_points(&grid, Vec2::new(0.4, 3.5), 0.5);
        assert_eq!(edge, vec![Vec2::new(0.0, 3.5)]);
    }
}
