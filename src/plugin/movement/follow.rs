//! Following a path: tracking which corridor cells a unit has passed, planning the curve to the
//! next waypoint with a turning radius, and advancing along the waypoints. Pure functions over
//! the grid.

use bevy::prelude::*;

use crate::core::{Cell, NavGrid, TurnPlan, fmath, overlaps_blocked, walkable};

use super::state::Leg;

/// How many corridor cells ahead of the last one passed a unit's cell is looked for.
const TRACK_AHEAD: usize = 8;

/// Distance between the samples of an arc checked against walls, and the margin added to the
/// body for the distance between samples.
const ARC_SAMPLE: f32 = 0.02;
const ARC_MARGIN: f32 = 0.01;

/// Turning-radius fallbacks (fraction of the radius, speed factor) and the speed of a turn in
/// place after all of them failed. A fallback's factor holds through its arc only, and a turn
/// in place's for as long as the tightest fallback's arc through the same angle would be: the
/// straight line after a turn is walked at full speed.
const TURN_FALLBACKS: [(f32, f32); 3] = [(1.0, 1.0), (0.5, 0.7), (0.25, 0.5)];
const TURN_IN_PLACE_SPEED: f32 = 0.35;

/// The index of the next corridor cell after a unit standing on `here`: `here` looked for a
/// little ahead of `cell_index` (the cell before it included), and every cell before it counted
/// as passed. Off the corridor (in a turn's arc, say) nothing more is passed.
pub(crate) fn track(corridor: &[Cell], cell_index: usize, here: Cell) -> usize {
    let from = cell_index.saturating_sub(1);
    corridor
        .iter()
        .skip(from)
        .take(TRACK_AHEAD + 1)
        .position(|&c| c == here)
        .map_or(cell_index, |k| from + k + 1)
}

/// The curve from `pos`, facing `heading`, to `target` for a body of `radius` with a turning
/// radius of `turning_radius`, the speed factor through its turn (see
/// [`PathProgress`](super::PathProgress) for the fallbacks), and the distance from its start
/// that the factor holds for (see [`TURN_FALLBACKS`]).
pub(crate) fn plan_turn(
    grid: &NavGrid,
    radius: f32,
    turning_radius: f32,
    pos: Vec2,
    heading: Vec2,
    target: Vec2,
) -> (TurnPlan, f32, f32) {
    if turning_radius <= 0.0 {
        return (TurnPlan::in_place(pos, target), 1.0, 0.0);
    }
    for (scale, speed) in TURN_FALLBACKS {
        if let Some(plan) = TurnPlan::new(pos, heading, target, turning_radius * scale) {
            // The arc, sampled finely with a margin for the distance between samples, then the
            // line, exactly.
            let arc = plan.arc_length();
            let n = (arc / ARC_SAMPLE).ceil() as u32;
            let arc_clear = arc < 1e-3
                || (0..=n).all(|k| {
                    let p = plan.sample(arc * k as f32 / n as f32).0;
                    !overlaps_blocked(grid, p, radius + ARC_MARGIN)
                });
            if arc_clear && walkable(grid, plan.tangent, plan.target, radius) {
                let speed = if plan.sweep.abs() < 0.05 { 1.0 } else { speed };
                return (plan, speed, arc);
            }
        }
    }
    let plan = TurnPlan::in_place(pos, target);
    let angle = fmath::acos(
        heading
            .try_normalize()
            .unwrap_or(plan.line_heading)
            .dot(plan.line_heading)
            .clamp(-1.0, 1.0),
    );
    let tightest = TURN_FALLBACKS[TURN_FALLBACKS.len() - 1].0;
    let slow_for = (angle * turning_radius * tightest).min(plan.length());
    (plan, TURN_IN_PLACE_SPEED, slow_for)
}

/// A unit's walk along its waypoints (grid space), one frame at a time.
pub(crate) struct Walk<'a> {
    pub(crate) grid: &'a NavGrid,
    /// The path's waypoints in grid space.
    pub(crate) waypoints: &'a dyn Fn(usize) -> Vec2,
    pub(crate) waypoint_count: usize,
    pub(crate) radius: f32,
    pub(crate) turning_radius: f32,
    /// The path's corridor (its searched cells) and the index of the unit's next cell in it:
    /// a unit pushed off its path onto a cell from whose center the next waypoint cannot be
    /// seen walks back along the corridor, cell center to cell center, instead of searching
    /// again.
    pub(crate) corridor: &'a [Cell],
    pub(crate) cell_index: usize,
}

/// Where a unit is after a frame's walk.
pub(crate) struct Walked {
    pub(crate) pos: Vec2,
    pub(crate) heading: Vec2,
    /// Even the line from its cell center to the next waypoint is blocked, and so is every line
    /// back to the corridor near it (an edit blocked the path itself): the unit stopped and
    /// needs a new path.
    pub(crate) blocked: bool,
}

impl Walk<'_> {
    /// Walks `distance` tiles from `pos` along the waypoints from `*waypoint` on, continuing
    /// `leg` and planning new legs as waypoints are reached.
    pub(crate) fn advance(
        &self,
        waypoint: &mut usize,
        leg: &mut Option<Leg>,
        speed_factor: &mut f32,
        mut pos: Vec2,
        mut heading: Vec2,
        mut distance: f32,
    ) -> Walked {
        while distance > 0.0 && *waypoint < self.waypoint_count {
            if leg.is_none() {
                match self.next_leg(*waypoint, pos, heading) {
                    Some((next, speed)) => {
                        *speed_factor = speed;
                        *leg = Some(next);
                    }
                    None => {
                        return Walked {
                            pos,
                            heading,
                            blocked: true,
                        };
                    }
                }
            }
            let l = leg.as_mut().expect("planned");
            // Slow through the turn, then full speed along the line.
            let end = if l.travelled < l.slow_for {
                l.slow_for
            } else {
                *speed_factor = 1.0;
                l.plan.length()
            };
            let step = (distance * *speed_factor).min(end - l.travelled);
            l.travelled += step.max(0.0);
            let (p, h) = l.plan.sample(l.travelled);
            pos = p;
            if h != Vec2::ZERO {
                heading = h;
            }
            distance -= step.max(1e-6) / speed_factor.max(1e-3);
            if l.travelled >= l.plan.length() - 1e-4 {
                let detour = l.detour;
                *leg = None;
                if !detour {
                    *waypoint += 1;
                }
            }
        }
        Walked {
            pos,
            heading,
            blocked: false,
        }
    }

    /// The leg to waypoint `i` from `pos`, with its speed factor. Off its path (after an arc,
    /// a push, making way, or a new path found elsewhere), or on it after an edit, the straight
    /// line to the waypoint may clip a wall: the leg then goes to a cell center from which the
    /// waypoint is in sight ([`Walk::through_cell`]), else to the center of the unit's own cell
    /// (always safe) and from there, if the waypoint is still hidden, back to the corridor;
    /// `None` if even that is blocked.
    fn next_leg(&self, i: usize, pos: Vec2, heading: Vec2) -> Option<(Leg, f32)> {
        let target = (self.waypoints)(i);
        // The body, on its path too: smoothing kept it off the walls of the grid it saw, but a
        // wall edited in beside a segment since (or beside a raw diagonal step's corner) would
        // be clipped by a body that trusted the segment's line.
        if walkable(self.grid, pos, target, self.radius) {
            let (plan, speed, slow_for) = plan_turn(
                self.grid,
                self.radius,
                self.turning_radius,
                pos,
                heading,
                target,
            );
            return Some((
                Leg {
                    plan,
                    travelled: 0.0,
                    slow_for,
                    detour: false,
                },
                speed,
            ));
        }
        let center = self.grid.cell_center(self.grid.cell_at(pos));
        let detour = match self.through_cell(pos, target, center) {
            Some(via) => via,
            None if pos.distance(center) > 1e-3 => center,
            None => self.back_to_corridor(pos)?,
        };
        Some((
            Leg {
                plan: TurnPlan::in_place(pos, detour),
                travelled: 0.0,
                slow_for: 0.0,
                detour: true,
            },
            1.0,
        ))
    }

    /// Of the centers of the unit's own cell (`own`) and of the corridor's cells near its place
    /// in it, the one on the shortest way to `target` that the unit can walk to in a straight
    /// line and from which `target` is in sight (`None` if there is none). Pushed a little off
    /// the line into a gap one cell wide, a unit walked back to its own cell's center first,
    /// often away from the gap, where the center of the corridor's cell before the gap was on
    /// its way.
    fn through_cell(&self, pos: Vec2, target: Vec2, own: Vec2) -> Option<Vec2> {
        let near = self.cell_index.saturating_sub(1)..self.cell_index + TRACK_AHEAD;
        std::iter::once(own)
            .chain(
                near.filter_map(|i| self.corridor.get(i))
                    .map(|&c| self.grid.cell_center(c)),
            )
            .filter(|&c| c.distance(pos) > 1e-3)
            .map(|c| (c, pos.distance(c) + c.distance(target)))
            .fold(None::<(Vec2, f32)>, |best, (c, length)| match best {
                Some((_, b)) if b <= length => best,
                _ if walkable(self.grid, pos, c, self.radius)
                    && walkable(self.grid, c, target, self.radius) =>
                {
                    Some((c, length))
                }
                _ => best,
            })
            .map(|(c, _)| c)
    }

    /// From a cell center that cannot see the next waypoint: the center of the corridor cell it
    /// can walk to in a straight line, nearest its place in the corridor: its next cell, else
    /// the one before, else the next ones on (`None` if there is none). The corridor's cells
    /// are searched 8-way moves, so walking their centers one after the other is always clear,
    /// and the unit passes them one by one, claims following.
    fn back_to_corridor(&self, pos: Vec2) -> Option<Vec2> {
        let next = self.cell_index;
        let order = std::iter::once(next)
            .chain(next.checked_sub(1))
            .chain(next + 1..next + TRACK_AHEAD);
        order
            .filter_map(|i| self.corridor.get(i))
            .map(|&c| self.grid.cell_center(c))
            .find(|&c| c.distance(pos) > 1e-3 && walkable(self.grid, pos, c, self.radius))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracking_passes_cells_up_to_the_units_cell() {
        let corridor: Vec<Cell> = (0..20).map(|x| Cell::new(x, 0)).collect();
        // On cell 3 with cell 1 next: cells 1-3 passed, 4 next.
        assert_eq!(track(&corridor, 1, Cell::new(3, 0)), 4);
        // Off the corridor: nothing passed.
        assert_eq!(track(&corridor, 4, Cell::new(3, 5)), 4);
        // Too far ahead to be looked for.
        assert_eq!(track(&corridor, 1, Cell::new(15, 0)), 1);
    }

    /// Walks a body of radius 0.3, turning in place, from `start` along two waypoints: `steps`
    /// frames of `distance` tiles. Returns the last position, the waypoint reached and the leg.
    fn walk_two(
        grid: &NavGrid,
        points: [Vec2; 2],
        start: Vec2,
        steps: usize,
        distance: f32,
    ) -> (Vec2, usize, Option<Leg>) {
        let waypoints = |i: usize| points[i];
        let walk = Walk {
            grid,
            waypoints: &waypoints,
            waypoint_count: 2,
            radius: 0.3,
            turning_radius: 0.0,
            corridor: &[],
            cell_index: 0,
        };
        let (mut waypoint, mut leg, mut speed, mut pos) = (1, None, 1.0, start);
        for _ in 0..steps {
            let w = walk.advance(&mut waypoint, &mut leg, &mut speed, pos, Vec2::X, distance);
            assert!(!w.blocked);
            pos = w.pos;
        }
        (pos, waypoint, leg)
    }

    #[test]
    fn a_walk_reaches_the_end_of_a_straight_path() {
        let grid = NavGrid::new(10, 3).unwrap();
        let points = [Vec2::new(0.5, 1.5), Vec2::new(9.5, 1.5)];
        let (pos, waypoint, _) = walk_two(&grid, points, points[0], 10, 1.0);
        assert_eq!(waypoint, 2);
        assert!(pos.distance(points[1]) < 1e-3);
    }

    #[test]
    fn a_unit_pushed_behind_a_wall_walks_back_to_its_corridor_instead_of_searching_again() {
        // A path along row 2; the unit was pushed up to the center of cell (3, 4), from where a
        // wall at (4, 3)-(4, 4) hides the path's end.
        let mut grid = NavGrid::new(7, 5).unwrap();
        grid.set_walkable(Cell::new(4, 3), false).unwrap();
        grid.set_walkable(Cell::new(4, 4), false).unwrap();
        let points = [Vec2::new(0.5, 2.5), Vec2::new(6.5, 2.5)];
        let corridor: Vec<Cell> = (0..7).map(|x| Cell::new(x, 2)).collect();
        let waypoints = |i: usize| points[i];
        let walk = Walk {
            grid: &grid,
            waypoints: &waypoints,
            waypoint_count: 2,
            radius: 0.3,
            turning_radius: 0.0,
            corridor: &corridor,
            cell_index: 4,
        };
        let (mut waypoint, mut leg, mut speed) = (1, None, 1.0);
        let mut pos = Vec2::new(3.5, 4.5);
        let first = walk.advance(&mut waypoint, &mut leg, &mut speed, pos, Vec2::X, 0.1);
        assert!(!first.blocked, "no new search needed");
        let back = leg.as_ref().expect("a leg back to the corridor");
        assert!(back.detour);
        assert_eq!(back.plan.target, Vec2::new(3.5, 2.5));
        pos = first.pos;
        for _ in 0..100 {
            let w = walk.advance(&mut waypoint, &mut leg, &mut speed, pos, Vec2::X, 0.1);
            assert!(!w.blocked);
            assert!(
                !overlaps_blocked(&grid, w.pos, 0.3),
                "clear of the wall at {}",
                w.pos
            );
            pos = w.pos;
        }
        assert_eq!(waypoint, 2, "the path's end reached");
        assert!(pos.distance(points[1]) < 1e-3);
        // Without a corridor to go back to (the old behaviour), the unit needs a new path.
        let lost = Walk {
            corridor: &[],
            ..walk
        };
        let (mut waypoint, mut leg) = (1, None);
        let w = lost.advance(
            &mut waypoint,
            &mut leg,
            &mut speed,
            Vec2::new(3.5, 4.5),
            Vec2::X,
            0.1,
        );
        assert!(w.blocked);
    }

    #[test]
    fn a_walk_off_its_path_steps_to_its_cell_center_before_a_line_that_clips_a_wall() {
        let mut grid = NavGrid::new(5, 5).unwrap();
        grid.set_walkable(Cell::new(2, 1), false).unwrap();
        // Standing low in cell (1, 2), the line to (3.5, 2.5) would clip the wall at (2, 1).
        let points = [Vec2::new(1.5, 2.5), Vec2::new(3.5, 2.5)];
        let (_, _, leg) = walk_two(&grid, points, Vec2::new(1.5, 2.1), 1, 0.1);
        let leg = leg.expect("a leg was planned");
        assert!(leg.detour);
        assert_eq!(leg.plan.target, grid.cell_center(Cell::new(1, 2)));
    }

    #[test]
    fn a_tight_turn_slows_the_turn_only_not_the_line_after_it() {
        // A corridor one tile high: a body of radius 0.4 facing west cannot turn east on any
        // arc, so it turns in place, slowly, then walks the 13 tiles east at full speed.
        let grid = NavGrid::new(20, 1).unwrap();
        let (start, target) = (Vec2::new(2.5, 0.5), Vec2::new(15.5, 0.5));
        let (plan, speed, slow_for) = plan_turn(&grid, 0.4, 1.0, start, -Vec2::X, target);
        assert_eq!(plan.radius, 0.0, "turns in place");
        assert_eq!(speed, TURN_IN_PLACE_SPEED);
        // As long as the tightest fallback's half circle.
        let half_circle = std::f32::consts::PI * 1.0 * TURN_FALLBACKS[2].0;
        assert!((slow_for - half_circle).abs() < 1e-3, "{slow_for}");
        let waypoints = |i: usize| [start, target][i];
        let walk = Walk {
            grid: &grid,
            waypoints: &waypoints,
            waypoint_count: 2,
            radius: 0.4,
            turning_radius: 1.0,
            corridor: &[],
            cell_index: 0,
        };
        let (mut waypoint, mut leg, mut factor, mut pos, mut heading) =
            (1, None, 1.0, start, -Vec2::X);
        // Frames of a tenth of a tile at full speed: slow through the turn, then full speed.
        let mut factors = Vec::new();
        for _ in 0..40 {
            let w = walk.advance(&mut waypoint, &mut leg, &mut factor, pos, heading, 0.1);
            (pos, heading) = (w.pos, w.heading);
            factors.push(factor);
        }
        // 0.785 tiles at 0.035 a frame: 23 frames.
        assert!(
            factors[..22].iter().all(|&f| f == TURN_IN_PLACE_SPEED),
            "{factors:?}"
        );
        assert!(factors[23..].iter().all(|&f| f == 1.0), "{factors:?}");
        // 4 tiles of walking: the turn took 0.785 / 0.35 = 2.24 of them, the line the rest.
        let expected = start.x + half_circle + (4.0 - half_circle / TURN_IN_PLACE_SPEED);
        assert!((pos.x - expected).abs() < 0.02, "{} vs {expected}", pos.x);
    }
}
