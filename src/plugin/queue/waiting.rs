//! The waiting list: validated requests waiting for a search to start. Starts are picked best
//! first (see `policy`) without a pass over the whole list at every start: the frame's next
//! starts are picked once a frame, and jobs that come back within the frame are merged in.
//! How many waiting jobs share each goal is kept, so a shared search's start looks for the
//! others only when there are some.

use std::cmp::Ordering;

use bevy::platform::collections::HashMap;
use bevy::prelude::*;

use crate::core::Cell;
use crate::plugin::classes::ClassId;

use super::job::Job;
use super::policy::take_starts;

/// A shared goal: the map, the class grid and the cell its tree grows from.
type GoalKey = (Entity, ClassId, Cell);

/// `job`'s shared goal, if it can share a search.
fn goal_key(job: &Job) -> Option<GoalKey> {
    job.shared_goal().map(|g| (job.map, job.class, g))
}

/// Validated requests waiting for a search to start.
#[derive(Default)]
pub(super) struct WaitingList {
    /// The jobs to start next, picked for `frame`, in start order reversed (the next one last).
    /// Every job in `rest` starts after every one of them.
    next: Vec<Job>,
    /// The frame `next` was picked for.
    frame: Option<u64>,
    /// Jobs that came while `next` was not empty, merged at the next start.
    fresh: Vec<Job>,
    /// The other waiting jobs, in no particular order.
    rest: Vec<Job>,
    /// How many waiting jobs share each goal (see [`Job::shared_goal`]).
    goals: HashMap<GoalKey, u32>,
}

impl WaitingList {
    /// How many jobs wait.
    pub(super) fn len(&self) -> usize {
        self.next.len() + self.fresh.len() + self.rest.len()
    }

    /// Whether none waits.
    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every waiting job, in a deterministic order (the picked next starts first).
    pub(super) fn iter(&self) -> impl Iterator<Item = &Job> {
        self.next.iter().rev().chain(&self.fresh).chain(&self.rest)
    }

    /// Whether a waiting job shares `goal` on `map`'s grid of `class`.
    pub(super) fn has_goal(&self, map: Entity, class: ClassId, goal: Cell) -> bool {
        self.goals.contains_key(&(map, class, goal))
    }

    /// Adds `job`.
    pub(super) fn push(&mut self, job: Job) {
        if let Some(key) = goal_key(&job) {
            *self.goals.entry(key).or_default() += 1;
        }
        if self.next.is_empty() {
            self.rest.push(job);
        } else {
            self.fresh.push(job);
        }
    }

    /// Forgets `job`'s goal (it left the list).
    fn left(&mut self, job: &Job) {
        let Some(key) = goal_key(job) else {
            return;
        };
        if let Some(n) = self.goals.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                self.goals.remove(&key);
            }
        }
    }

    /// Keeps the jobs `keep` holds true for.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&Job) -> bool) {
        self.extract_if(|j| !keep(j));
    }

    /// Removes and returns the jobs `take` holds true for, in [`WaitingList::iter`]'s order.
    pub(super) fn extract_if(&mut self, mut take: impl FnMut(&Job) -> bool) -> Vec<Job> {
        let mut taken: Vec<Job> = self.next.extract_if(.., |j| take(j)).collect();
        taken.reverse();
        taken.extend(self.fresh.extract_if(.., |j| take(j)));
        taken.extend(self.rest.extract_if(.., |j| take(j)));
        for j in &taken {
            self.left(j);
        }
        taken
    }

    /// Removes up to `n` jobs and returns them in start order: highest aged priority first,
    /// lowest ticket among equals (`key` gives a job's (aged priority, ticket) at `frame`,
    /// which must not change within a frame). The list picks up to `batch` next starts at a
    /// time (the frame's starts left), so a frame's starts cost one pass over the list; also
    /// returns how many jobs the picks went over (their work, counted).
    pub(super) fn take_starts(
        &mut self,
        n: usize,
        batch: usize,
        frame: u64,
        key: impl Fn(&Job) -> (i64, u64),
    ) -> (Vec<Job>, u64) {
        let order = |a: &Job, b: &Job| {
            let (pa, ta) = key(a);
            let (pb, tb) = key(b);
            pb.cmp(&pa).then(ta.cmp(&tb))
        };
        if self.frame != Some(frame) {
            // Ageing may have changed the order: pick again.
            self.rest.append(&mut self.next);
            self.rest.append(&mut self.fresh);
            self.frame = Some(frame);
        }
        // Jobs that came back since the pick: ahead of the picked ones' last, among them.
        for job in std::mem::take(&mut self.fresh) {
            match self.next.first() {
                Some(last) if order(&job, last) == Ordering::Less => {
                    let at = self
                        .next
                        .partition_point(|j| order(j, &job) == Ordering::Greater);
                    self.next.insert(at, job);
                }
                _ => self.rest.push(job),
            }
        }
        let mut starting = Vec::with_capacity(n.min(self.len()));
        let mut looked = 0;
        while starting.len() < n {
            if self.next.is_empty() {
                if self.rest.is_empty() {
                    break;
                }
                let want = batch.max(n - starting.len());
                looked += self.rest.len() as u64;
                self.next = take_starts(&mut self.rest, want, &key);
                self.next.reverse();
            }
            let job = self.next.pop().expect("not empty");
            self.left(&job);
            starting.push(job);
        }
        (starting, looked)
    }
}

impl Extend<Job> for WaitingList {
    fn extend<I: IntoIterator<Item = Job>>(&mut self, jobs: I) {
        for job in jobs {
            self.push(job);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::queue::policy::aged_priority;

    use crate::core::GoalPolicy;
    use crate::plugin::queue::job::JobGoal;
    use crate::plugin::request::PathRequest;

    fn job(ticket: u64, priority: i32, enqueued: u64, goal: Cell) -> Job {
        Job {
            entity: Entity::PLACEHOLDER,
            ticket,
            map: Entity::PLACEHOLDER,
            class: ClassId::default(),
            goal: JobGoal::Single(goal),
            policy: GoalPolicy::Fail,
            priority,
            enqueued,
            request: PathRequest::to_cell(goal),
            alone: false,
            priced: None,
            repriced: false,
        }
    }

    fn key(frame: u64) -> impl Fn(&Job) -> (i64, u64) {
        move |j: &Job| (aged_priority(j.priority, j.enqueued, frame, 10), j.ticket)
    }

    fn tickets(jobs: &[Job]) -> Vec<u64> {
        jobs.iter().map(|j| j.ticket).collect()
    }

    /// The reference: every start picked from the whole list, as `policy::take_starts` does.
    fn reference(all: &mut Vec<Job>, n: usize, frame: u64) -> Vec<u64> {
        tickets(&take_starts(all, n, key(frame)))
    }

    #[test]
    fn starts_match_a_pick_over_the_whole_list_with_jobs_coming_back_mid_frame() {
        let mut list = WaitingList::default();
        let mut all = Vec::new();
        let mut seed = 7u64;
        let mut rand = |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        let mut ticket = 0;
        for frame in 0..60 {
            for _ in 0..rand(6) {
                ticket += 1;
                let j = job(ticket, rand(4) as i32, frame, Cell::new(rand(5) as i32, 0));
                all.push(j.clone());
                list.push(j);
            }
            for _ in 0..rand(4) {
                let n = 1 + rand(3) as usize;
                let (got, _) = list.take_starts(n, 4, frame, key(frame));
                assert_eq!(
                    tickets(&got),
                    reference(&mut all, n, frame),
                    "frame {frame}"
                );
                // Some come back within the frame (a start cut off by the budget).
                if rand(3) == 0 {
                    for j in got {
                        all.push(j.clone());
                        list.push(j);
                    }
                }
            }
            if rand(5) == 0 {
                let gone = rand(4) as i32;
                list.retain(|j| j.priority != gone);
                all.retain(|j| j.priority != gone);
            }
            assert_eq!(list.len(), all.len());
            for x in 0..5 {
                let goal = Cell::new(x, 0);
                let want = all.iter().any(|j| j.shared_goal() == Some(goal));
                assert_eq!(
                    list.has_goal(Entity::PLACEHOLDER, ClassId::default(), goal),
                    want
                );
            }
        }
    }

    #[test]
    fn extracted_jobs_leave_their_goals() {
        let mut list = WaitingList::default();
        let (a, b) = (Cell::new(1, 1), Cell::new(2, 2));
        list.push(job(1, 0, 0, a));
        list.push(job(2, 0, 0, a));
        list.push(job(3, 0, 0, b));
        let taken = list.extract_if(|j| j.shared_goal() == Some(a));
        assert_eq!(tickets(&taken), vec![1, 2]);
        assert!(!list.has_goal(Entity::PLACEHOLDER, ClassId::default(), a));
        assert!(list.has_goal(Entity::PLACEHOLDER, ClassId::default(), b));
        assert_eq!(tickets(&list.take_starts(5, 5, 0, key(0)).0), vec![3]);
        assert!(list.is_empty());
        assert!(!list.has_goal(Entity::PLACEHOLDER, ClassId::default(), b));
    }
}
