//! The crowd decision: what a unit on its way does about the unit in its next cell (Lester's
//! notes on units in the way). A pure function of the unit's [`Situation`], tested without an
//! `App`; the movement system gathers the situation and carries the [`Action`] out.

use bevy::prelude::*;

use crate::core::{Cell, NavGrid};
use crate::plugin::settings::CrowdSettings;

/// How many of its wait times a unit kept from the last cells of its path by stopped units waits
/// before it stops where it is (if its goal is close enough).
const CLOSE_ENOUGH_WAITS: f32 = 4.0;

/// How many times [`CrowdSettings::walk_through_after`] a unit queued behind a waiting unit
/// waits before walking through.
const QUEUED_PATIENCE: f32 = 3.0;

/// How many times [`CrowdSettings::walk_through_after`] a unit on its way whose body has not got
/// a tile anywhere walks on before it walks through.
const STALLED_PATIENCE: f32 = 4.0;

/// How many of its wait times a unit meeting another (not head-on with it yielding) waits before
/// it repaths.
const MOVING_REPATH_WAITS: f32 = 3.0;

/// The unit in the next cell of a unit's path.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum InTheWay {
    /// A stopped unit; `on_goal`: the next cell is the goal; `wedged`: it stands in a passage
    /// one cell wide, where a shove cannot move it aside (it is asked to make way instead).
    Stopped {
        unit: Entity,
        on_goal: bool,
        wedged: bool,
    },
    /// A moving unit: `head_on` if it wants this unit's cell next, `waits` if it is waiting
    /// itself (`patient`: for a one-way passage, or queued behind a unit that does),
    /// `we_yield` if this unit gives way when they meet head-on (the later in lockstep order in
    /// lockstep mode, else the later entity).
    Moving {
        unit: Entity,
        head_on: bool,
        waits: bool,
        patient: bool,
        we_yield: bool,
        /// The two cells are not in a passage one cell wide: bodies meeting head-on there
        /// can slide past each other.
        passable: bool,
    },
}

/// What a unit on its way knows this frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Situation {
    /// Its body is held back by the crowd, far behind the point of its curve (which waits for
    /// it): moving, but as good as waiting.
    pub(crate) held_back: bool,
    /// Seconds since its body was last a tile away from where it stood then.
    pub(crate) stalled: f32,
    /// The passage one cell wide its next cells lead into is closed to it now (a unit comes
    /// through the other way, or it is the other way's turn).
    pub(crate) passage_closed: bool,
    /// The unit in its next cell (not its own), if any.
    pub(crate) in_the_way: Option<InTheWay>,
    /// Seconds it has waited, this frame included (0 if it was not waiting).
    pub(crate) waited: f32,
    /// Its patience: seconds to wait before repathing or yielding.
    pub(crate) wait_time: f32,
    /// Seconds spent waiting since it last got a tile closer to its goal.
    pub(crate) blocked: f32,
    /// Already walking through other units.
    pub(crate) walking_through: bool,
    /// Near its goal to stop at the edge of its group's crowd ([`near_goal`]; worked out only
    /// if it [`may_stop_short`], else `false`).
    pub(crate) near_goal: bool,
    /// No other stopped unit stands on its own cell.
    pub(crate) free_here: bool,
    /// A request of its own is still waiting for an outcome.
    pub(crate) pending: bool,
    /// Repaths since it last got closer to its goal.
    pub(crate) stuck_repaths: u32,
    /// Times it stepped aside since it last reached a goal.
    pub(crate) yields: u32,
    /// It is making way for another unit itself.
    pub(crate) making_way: bool,
    /// Its body covers more than its own cell (a tank): it cannot push through a crowd.
    pub(crate) wide: bool,
}

impl Situation {
    /// Waiting now is waiting for a one-way passage, directly or queued behind a unit that
    /// does: the last resort comes only after two of the passage's turns.
    pub(crate) fn patient(&self) -> bool {
        self.passage_closed
            || matches!(
                self.in_the_way,
                Some(InTheWay::Moving {
                    head_on: false,
                    waits: true,
                    patient: true,
                    ..
                })
            )
    }
}

/// What a unit does after waiting (one of them, at most, per frame).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Reaction {
    /// Search again for its goal (stopped units are searched around).
    Repath,
    /// Its goal is taken by a stopped unit: go to the nearest free cell instead (or, if there
    /// is none, count itself arrived).
    TakeFreeCell,
    /// Step aside for `for_unit` (met head-on), then resume.
    StepAside { for_unit: Entity },
}

/// What a unit on its way does this frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Action {
    /// Walk on (`start_walking_through`: from now on through other units).
    Go { start_walking_through: bool },
    /// Wait for the unit in the way, asking a stopped one to make way, and maybe react.
    Wait {
        ask_to_make_way: Option<Entity>,
        then: Option<Reaction>,
    },
    /// Its group has gathered around its goal and it is at the edge: stop here, arrived.
    StopHere,
}

/// Whether a unit kept from the last cells of its path by a stopped unit, on a cell no other
/// stopped unit holds, has waited long enough to stop where it is ([`Action::StopHere`]) if it
/// is [`near_goal`] too (worked out only then: it walks the cells round the unit).
pub(crate) fn may_stop_short(s: &Situation) -> bool {
    matches!(s.in_the_way, Some(InTheWay::Stopped { .. }))
        && s.free_here
        && s.blocked > CLOSE_ENOUGH_WAITS * s.wait_time
}

/// Whether a unit on `here` counts as near its `goal` for stopping at the edge of its group's
/// crowd ([`Action::StopHere`]): within [`CrowdSettings::close_enough`] steps of `grid` (its
/// class's), not in a passage one cell wide, which a unit stopped in it would close to every
/// unit behind it, and not with a wall between (the goal that many steps away without a way
/// through a gate one cell wide in the map's `walls`): units stopped at a gate's mouth with
/// their goals through it stood on the wrong side of the wall and closed the gate
/// (BENCHMARKS.md, how the defaults were chosen: crowds).
pub(crate) fn near_goal(
    (grid, walls): (&NavGrid, &NavGrid),
    here: Cell,
    goal: Cell,
    crowd: &CrowdSettings,
) -> bool {
    let reach = crowd.close_enough;
    grid.open_steps(here, goal) as i32 <= reach
        && !grid.is_one_wide(here)
        && walk_within((grid, walls), here, goal, reach.max(0) as u32)
}

/// Whether `goal` is at most `steps` steps (the move rules' on `grid`) from `here`, never
/// through a passage one cell wide in `walls` (but into one that is the goal): a breadth-first
/// walk in the square of `steps` cells round `here`.
fn walk_within((grid, walls): (&NavGrid, &NavGrid), here: Cell, goal: Cell, steps: u32) -> bool {
    if here == goal {
        return true;
    }
    let side = 2 * steps as i32 + 1;
    let slot = |c: Cell| {
        let d = c - here + Cell::new(steps as i32, steps as i32);
        (d.x >= 0 && d.y >= 0 && d.x < side && d.y < side).then(|| (d.y * side + d.x) as usize)
    };
    let mut seen = vec![false; (side * side) as usize];
    seen[slot(here).expect("the middle")] = true;
    let mut ring = vec![here];
    for _ in 0..steps {
        let mut next = Vec::new();
        for &c in &ring {
            for dy in -1..=1 {
                for dx in -1..=1 {
                    let n = Cell::new(c.x + dx, c.y + dy);
                    if n == goal && grid.can_step(c, n) {
                        return true;
                    }
                    let Some(i) = slot(n) else { continue };
                    if !seen[i] && grid.can_step(c, n) && !walls.is_one_wide(n) {
                        seen[i] = true;
                        next.push(n);
                    }
                }
            }
        }
        ring = next;
    }
    false
}

/// The crowd decision (see the module docs).
pub(crate) fn decide(s: &Situation, crowd: &CrowdSettings) -> Action {
    let may_react = !s.pending && s.waited > s.wait_time;
    let may_repath = s.stuck_repaths < crowd.max_stuck_repaths;
    if may_stop_short(s) && s.near_goal {
        return Action::StopHere;
    }
    if s.walking_through {
        return Action::Go {
            start_walking_through: false,
        };
    }
    let action = about_the_way(s, crowd, may_react, may_repath);
    last_resort(s, crowd, may_repath, action)
}

/// What the unit does about the unit in its way (or a closed one-way passage), before the last
/// resorts (see [`decide`]).
fn about_the_way(
    s: &Situation,
    crowd: &CrowdSettings,
    may_react: bool,
    may_repath: bool,
) -> Action {
    let go = Action::Go {
        start_walking_through: false,
    };
    match s.in_the_way {
        // A one-way passage ahead is closed: wait at its end for it to open; a wide unit kept
        // out of it for a whole turn looks for another way (its repath is searched around the
        // crowd; see `Overlay::new`).
        _ if s.passage_closed => Action::Wait {
            ask_to_make_way: None,
            then: (s.wide && may_react && may_repath && s.blocked > crowd.one_way_turn)
                .then_some(Reaction::Repath),
        },
        None => go,
        // With pushing, a stopped unit off the goal is shoved aside, not waited for.
        Some(InTheWay::Stopped {
            on_goal: false,
            wedged: false,
            ..
        }) if crowd.pushing => go,
        // A stopped unit: repath around it (searches treat stopped units as blocked), or, if it
        // holds the goal, take the nearest free cell. If going around was tried already (or the
        // next cell is the only way, so the repath came back through it), ask it to make way,
        // unless making way itself: two units in a dead end asked each other in turn forever.
        Some(InTheWay::Stopped { unit, on_goal, .. }) => Action::Wait {
            ask_to_make_way: (s.stuck_repaths > 0 && !on_goal && !s.making_way).then_some(unit),
            then: (may_react && may_repath).then_some(if on_goal {
                Reaction::TakeFreeCell
            } else {
                Reaction::Repath
            }),
        },
        // With pushing, units meeting head-on where there is room walk on: the push parts
        // them sideways, each to its right, and they pass.
        Some(InTheWay::Moving {
            head_on: true,
            waits: false,
            passable: true,
            ..
        }) if crowd.pushing => go,
        // A unit moving on ahead is no obstacle: it is leaving the cell.
        Some(InTheWay::Moving {
            head_on: false,
            waits: false,
            ..
        }) => go,
        Some(InTheWay::Moving {
            unit,
            head_on,
            we_yield,
            ..
        }) => {
            let then = if !may_react {
                None
            } else if head_on && we_yield && s.yields < crowd.max_yields {
                Some(Reaction::StepAside { for_unit: unit })
            } else if s.waited > MOVING_REPATH_WAITS * s.wait_time && may_repath {
                Some(Reaction::Repath)
            } else {
                None
            };
            Action::Wait {
                ask_to_make_way: None,
                then,
            }
        }
    }
}

/// The last resorts of [`decide`], in place of `action`: another way looked for, or walking
/// through the crowd.
fn last_resort(s: &Situation, crowd: &CrowdSettings, may_repath: bool, action: Action) -> Action {
    // The last resort against gridlock, instead of waiting on (never when the way is clear this
    // frame), later for a unit queued behind a waiting one: the front of the queue is where
    // the jam is.
    let queued = matches!(
        s.in_the_way,
        Some(InTheWay::Moving {
            head_on: false,
            waits: true,
            ..
        })
    );
    let patience = if s.patient() {
        // Two turns of a one-way passage, at most (a passage kept shut longer is a jam).
        crowd.walk_through_after + 2.0 * crowd.one_way_turn
    } else {
        crowd.walk_through_after * if queued { QUEUED_PATIENCE } else { 1.0 }
    };
    match action {
        // A unit held back by a crowd it cannot push through looks for another way (its
        // repath is searched around the crowd; see `Overlay::new`) after each
        // `walk_through_after` seconds held, while it has repaths left, before the last resort
        // walks it through the crowd.
        Action::Go { .. }
            if s.held_back
                && !s.pending
                && may_repath
                && s.blocked > crowd.walk_through_after * (s.stuck_repaths + 1) as f32 =>
        {
            Action::Wait {
                ask_to_make_way: None,
                then: Some(Reaction::Repath),
            }
        }
        Action::Wait { .. } if s.blocked > patience => Action::Go {
            start_walking_through: true,
        },
        // Held back (by bodies its next cell's claims do not show), or on its way without
        // getting a tile anywhere for long (wedged between bodies and a wall): the longer
        // patience of a queue, whose front is where the jam is.
        Action::Go { .. }
            if s.held_back && s.blocked > QUEUED_PATIENCE * crowd.walk_through_after
                || s.stalled > STALLED_PATIENCE * crowd.walk_through_after =>
        {
            Action::Go {
                start_walking_through: true,
            }
        }
        action => action,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn other() -> Entity {
        Entity::from_raw_u32(7).unwrap()
    }

    fn waiting(waited: f32, in_the_way: InTheWay) -> Situation {
        Situation {
            held_back: false,
            stalled: 0.0,
            passage_closed: false,
            in_the_way: Some(in_the_way),
            waited,
            wait_time: 0.4,
            blocked: waited,
            walking_through: false,
            near_goal: false,
            free_here: true,
            pending: false,
            stuck_repaths: 0,
            yields: 0,
            making_way: false,
            wide: false,
        }
    }

    fn stopped() -> InTheWay {
        InTheWay::Stopped {
            unit: other(),
            on_goal: false,
            wedged: false,
        }
    }

    fn head_on(we_yield: bool) -> InTheWay {
        InTheWay::Moving {
            unit: other(),
            head_on: true,
            waits: false,
            patient: false,
            passable: false,
            we_yield,
        }
    }

    const GO: Action = Action::Go {
        start_walking_through: false,
    };

    fn wait(then: Option<Reaction>) -> Action {
        Action::Wait {
            ask_to_make_way: None,
            then,
        }
    }

    #[test]
    fn a_free_way_or_a_unit_moving_on_is_no_obstacle() {
        let crowd = CrowdSettings::default();
        let mut s = waiting(0.0, stopped());
        s.in_the_way = None;
        assert_eq!(decide(&s, &crowd), GO);
        let ahead = InTheWay::Moving {
            unit: other(),
            head_on: false,
            waits: false,
            patient: false,
            passable: false,
            we_yield: true,
        };
        assert_eq!(decide(&waiting(1.0, ahead), &crowd), GO);
    }

    #[test]
    fn with_pushing_a_stopped_unit_off_the_goal_is_shoved_aside() {
        let crowd = CrowdSettings::default();
        assert!(crowd.pushing);
        assert_eq!(decide(&waiting(0.5, stopped()), &crowd), GO);
        // Even kept in place for long: it shoves on, it does not walk through.
        let mut s = waiting(0.5, stopped());
        s.blocked = crowd.walk_through_after + 1.0;
        assert_eq!(decide(&s, &crowd), GO);
    }

    /// Crowd settings without pushing: units wait for, go round and ask stopped units.
    fn no_pushing() -> CrowdSettings {
        CrowdSettings {
            pushing: false,
            ..CrowdSettings::default()
        }
    }

    #[test]
    fn a_stopped_unit_is_waited_for_then_gone_round_then_asked_to_make_way() {
        let crowd = no_pushing();
        // Patience first.
        assert_eq!(decide(&waiting(0.1, stopped()), &crowd), wait(None));
        // Then a repath around it.
        assert_eq!(
            decide(&waiting(0.5, stopped()), &crowd),
            wait(Some(Reaction::Repath))
        );
        // The repath came back through it: ask it to make way, and repath once more.
        let mut s = waiting(0.5, stopped());
        s.stuck_repaths = 1;
        assert_eq!(
            decide(&s, &crowd),
            Action::Wait {
                ask_to_make_way: Some(other()),
                then: Some(Reaction::Repath),
            }
        );
        // Out of repaths: just wait (and ask).
        s.stuck_repaths = crowd.max_stuck_repaths;
        assert_eq!(
            decide(&s, &crowd),
            Action::Wait {
                ask_to_make_way: Some(other()),
                then: None,
            }
        );
        // A unit making way itself does not ask (no chain of units asking each other in turn).
        let mut making_way = s;
        making_way.making_way = true;
        assert_eq!(decide(&making_way, &crowd), wait(None));
        // A request already out: wait for its answer.
        let mut s = waiting(0.5, stopped());
        s.pending = true;
        assert_eq!(decide(&s, &crowd), wait(None));
    }

    #[test]
    fn a_taken_goal_sends_the_unit_to_a_free_cell_without_asking() {
        let crowd = CrowdSettings::default();
        let taken = InTheWay::Stopped {
            unit: other(),
            on_goal: true,
            wedged: false,
        };
        let mut s = waiting(0.5, taken);
        s.stuck_repaths = 1;
        assert_eq!(decide(&s, &crowd), wait(Some(Reaction::TakeFreeCell)));
    }

    #[test]
    fn a_unit_in_a_gate_or_with_a_wall_between_is_never_near_enough_to_stop() {
        let crowd = CrowdSettings::default();
        let mut grid = NavGrid::new(30, 12).unwrap();
        for y in (0..12).filter(|&y| y != 6) {
            grid.set_walkable(Cell::new(15, y), false).unwrap();
        }
        let goal = Cell::new(20, 6);
        assert!(
            !near_goal((&grid, &grid), Cell::new(15, 6), goal, &crowd),
            "in the gate"
        );
        assert!(
            near_goal((&grid, &grid), Cell::new(16, 6), goal, &crowd),
            "out of it"
        );
        assert!(
            !near_goal((&grid, &grid), Cell::new(2, 6), goal, &crowd),
            "too far"
        );
        // Before the gate, the goal only a walk through it away: a wall between.
        assert!(
            !near_goal((&grid, &grid), Cell::new(14, 6), goal, &crowd),
            "before it"
        );
        assert!(
            near_goal((&grid, &grid), Cell::new(14, 6), Cell::new(10, 2), &crowd),
            "on the goal's side"
        );
        // Round the end of a wall: near while the walk is short, not once it is long.
        let mut grid = NavGrid::new(30, 30).unwrap();
        for y in 0..20 {
            grid.set_walkable(Cell::new(15, y), false).unwrap();
        }
        let goal = Cell::new(17, 17);
        assert!(near_goal((&grid, &grid), Cell::new(13, 17), goal, &crowd));
        assert!(!near_goal(
            (&grid, &grid),
            Cell::new(13, 5),
            Cell::new(17, 5),
            &crowd
        ));
        // A tank's grid, with walls grown, may be one cell wide where the map is not.
        let mut tanks = grid.clone();
        for (x, y) in (0..30).flat_map(|x| (22..27).map(move |y| (x, y))) {
            tanks.set_walkable(Cell::new(x, y), x == 15).unwrap();
        }
        assert!(tanks.is_one_wide(Cell::new(15, 24)));
        let (from, to) = (Cell::new(15, 28), Cell::new(15, 20));
        assert!(!near_goal((&tanks, &tanks), from, to, &crowd));
        assert!(near_goal((&tanks, &grid), from, to, &crowd));
    }

    #[test]
    fn near_its_gathered_group_a_unit_stops_at_the_edge() {
        let crowd = CrowdSettings::default();
        let mut s = waiting(0.2, stopped());
        s.near_goal = true;
        s.blocked = 1.7; // more than four waits of 0.4 s
        assert_eq!(decide(&s, &crowd), Action::StopHere);
        // Not on a cell another stopped unit holds.
        s.free_here = false;
        assert_ne!(decide(&s, &crowd), Action::StopHere);
    }

    #[test]
    fn with_pushing_units_meeting_head_on_where_there_is_room_walk_on() {
        let crowd = CrowdSettings::default();
        let roomy = InTheWay::Moving {
            unit: other(),
            head_on: true,
            waits: false,
            patient: false,
            passable: true,
            we_yield: true,
        };
        assert_eq!(decide(&waiting(0.5, roomy), &crowd), GO);
        // Not without pushing, nor in a passage one cell wide.
        assert_ne!(decide(&waiting(0.5, roomy), &no_pushing()), GO);
        assert_ne!(decide(&waiting(0.5, head_on(true)), &crowd), GO);
    }

    #[test]
    fn a_wide_unit_kept_out_of_a_passage_for_a_turn_looks_for_another_way() {
        let crowd = CrowdSettings::default();
        let mut s = waiting(0.5, stopped());
        s.in_the_way = None;
        s.passage_closed = true;
        s.wide = true;
        assert_eq!(decide(&s, &crowd), wait(None), "it waits a turn first");
        s.blocked = crowd.one_way_turn + 0.1;
        assert_eq!(decide(&s, &crowd), wait(Some(Reaction::Repath)));
        // A unit of one cell waits on (it walks through others after two turns).
        s.wide = false;
        assert_eq!(decide(&s, &crowd), wait(None));
        // Out of repaths, or with a request out: it waits.
        s.wide = true;
        s.stuck_repaths = crowd.max_stuck_repaths;
        assert_eq!(decide(&s, &crowd), wait(None));
        s.stuck_repaths = 0;
        s.pending = true;
        assert_eq!(decide(&s, &crowd), wait(None));
    }

    #[test]
    fn a_closed_passage_is_waited_for_patiently() {
        let crowd = CrowdSettings::default();
        let mut s = waiting(0.5, stopped());
        s.in_the_way = None;
        s.passage_closed = true;
        assert_eq!(decide(&s, &crowd), wait(None));
        // Long past the usual patience, it still waits: two turns of the passage.
        s.blocked = crowd.walk_through_after + crowd.one_way_turn;
        assert_eq!(decide(&s, &crowd), wait(None));
        // A unit queued behind it is as patient.
        let queued = InTheWay::Moving {
            unit: other(),
            head_on: false,
            waits: true,
            patient: true,
            passable: true,
            we_yield: false,
        };
        let mut q = waiting(0.5, queued);
        q.blocked = QUEUED_PATIENCE * crowd.walk_through_after + 0.1;
        assert!(matches!(decide(&q, &crowd), Action::Wait { .. }));
        // Then the last resort, for a jam.
        s.blocked = crowd.walk_through_after + 2.0 * crowd.one_way_turn + 0.1;
        assert_eq!(
            decide(&s, &crowd),
            Action::Go {
                start_walking_through: true
            }
        );
    }

    #[test]
    fn held_back_or_stalled_for_long_a_unit_walks_through() {
        let crowd = CrowdSettings::default();
        let mut s = waiting(0.0, stopped());
        s.in_the_way = None;
        s.held_back = true;
        // Its searches round the crowd tried already.
        s.stuck_repaths = crowd.max_stuck_repaths;
        s.blocked = crowd.walk_through_after + 0.1;
        assert_eq!(decide(&s, &crowd), GO, "a queue's patience first");
        s.blocked = QUEUED_PATIENCE * crowd.walk_through_after + 0.1;
        let through = Action::Go {
            start_walking_through: true,
        };
        assert_eq!(decide(&s, &crowd), through);
        let mut s = waiting(0.0, stopped());
        s.in_the_way = None;
        s.stalled = STALLED_PATIENCE * crowd.walk_through_after + 0.1;
        assert_eq!(decide(&s, &crowd), through);
    }

    #[test]
    fn head_on_one_unit_steps_aside_a_few_times_the_other_waits() {
        let crowd = CrowdSettings::default();
        assert_eq!(
            decide(&waiting(0.5, head_on(true)), &crowd),
            wait(Some(Reaction::StepAside { for_unit: other() }))
        );
        assert_eq!(decide(&waiting(0.5, head_on(false)), &crowd), wait(None));
        // The one that does not yield repaths after three waits.
        assert_eq!(
            decide(&waiting(1.3, head_on(false)), &crowd),
            wait(Some(Reaction::Repath))
        );
        // After max_yields it stops yielding and repaths like the other.
        let mut s = waiting(1.3, head_on(true));
        s.yields = crowd.max_yields;
        assert_eq!(decide(&s, &crowd), wait(Some(Reaction::Repath)));
    }

    #[test]
    fn kept_in_place_too_long_a_unit_walks_through_until_told_otherwise() {
        let crowd = CrowdSettings::default();
        let through = Action::Go {
            start_walking_through: true,
        };
        let mut s = waiting(0.1, head_on(false));
        s.blocked = crowd.walk_through_after + 0.1;
        assert_eq!(decide(&s, &crowd), through);
        s.walking_through = true;
        assert_eq!(decide(&s, &crowd), GO);
        // A shorter setting starts it sooner.
        let eager = CrowdSettings {
            walk_through_after: 0.05,
            ..CrowdSettings::default()
        };
        assert_eq!(decide(&waiting(0.1, head_on(false)), &eager), through);
        // Without pushing, a stopped unit in the way counts too.
        let mut s = waiting(0.1, stopped());
        s.blocked = crowd.walk_through_after + 0.1;
        assert_eq!(decide(&s, &no_pushing()), through);
    }

    #[test]
    fn the_last_resort_replaces_a_wait_never_a_clear_way() {
        let crowd = CrowdSettings::default();
        // Blocked for long, but the way is clear this frame: it just walks on.
        let mut s = waiting(0.1, head_on(false));
        s.blocked = crowd.walk_through_after + 0.1;
        s.in_the_way = None;
        assert_eq!(decide(&s, &crowd), GO);
        let moving_on = InTheWay::Moving {
            unit: other(),
            head_on: false,
            waits: false,
            patient: false,
            passable: false,
            we_yield: false,
        };
        s.in_the_way = Some(moving_on);
        assert_eq!(decide(&s, &crowd), GO);
    }

    #[test]
    fn a_unit_queued_behind_a_waiting_one_waits_longer_than_the_queues_front() {
        let crowd = CrowdSettings::default();
        let queued = InTheWay::Moving {
            unit: other(),
            head_on: false,
            waits: true,
            patient: false,
            passable: false,
            we_yield: false,
        };
        let mut s = waiting(0.1, queued);
        s.blocked = crowd.walk_through_after + 0.1;
        assert!(matches!(decide(&s, &crowd), Action::Wait { .. }));
        s.blocked = QUEUED_PATIENCE * crowd.walk_through_after + 0.1;
        assert_eq!(
            decide(&s, &crowd),
            Action::Go {
                start_walking_through: true
            }
        );
    }

    #[test]
    fn a_unit_held_back_by_a_crowd_looks_for_another_way_before_walking_through() {
        let crowd = CrowdSettings::default();
        assert_eq!(crowd.max_stuck_repaths, 2);
        for wide in [false, true] {
            let held = |blocked, stuck_repaths| Situation {
                held_back: true,
                in_the_way: None,
                waited: 0.0,
                blocked,
                stuck_repaths,
                wide,
                ..waiting(0.0, stopped())
            };
            let repath = wait(Some(Reaction::Repath));
            let through = Action::Go {
                start_walking_through: true,
            };
            // Held back a while: it searches again, round the crowd (tanks and infantry alike).
            assert_eq!(decide(&held(1.5, 0), &crowd), GO);
            assert_eq!(decide(&held(2.5, 0), &crowd), repath);
            // The way it was given is walked a while; still held back, it searches once more.
            assert_eq!(decide(&held(2.5, 1), &crowd), GO);
            assert_eq!(decide(&held(4.5, 1), &crowd), repath);
            assert_eq!(decide(&held(4.5, 2), &crowd), GO);
            assert_eq!(decide(&held(6.5, 2), &crowd), through);
            // Out of repaths: the last resort.
            let spent = crowd.max_stuck_repaths;
            assert_eq!(decide(&held(6.5, spent), &crowd), through);
            // Not while a request of its own is pending.
            let pending = Situation {
                pending: true,
                ..held(2.5, 0)
            };
            assert_eq!(decide(&pending, &crowd), GO);
        }
    }
}
