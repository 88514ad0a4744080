//! Jump tables (JPS+) of the maps' grids, built on a thread of their own (a 512 x 512 grid
//! takes 15-20 ms, a 1024 x 1024 one four times that: a frame's worth, or several, if built on the
//! main thread) and given to their grid when done, brought up to date with the edits made
//! meanwhile. Searches scan until then; in lockstep mode a table is given to its grid at a
//! fixed tick after its build starts ([`Lockstep::region_ticks`](crate::Lockstep::region_ticks),
//! waiting for it then if it is late), so every client searches with it from the same tick.

use bevy::platform::collections::HashMap;
use bevy::prelude::*;
use crossbeam_channel::Receiver;

use crate::core::{BuiltJumpTable, NavGrid};
use crate::plugin::background::build_apart;
use crate::plugin::classes::ClassId;
use crate::plugin::settings::TilepathSettings;

use super::{GridSnapshot, NavMap};

/// The jump tables being built, by map and class (the default class: the shared grid).
#[derive(Default)]
pub(crate) struct TableBuilds {
    /// Runs of [`keep_jump_tables`] so far: in lockstep mode, a tick each.
    tick: u64,
    builds: HashMap<(Entity, ClassId), Build>,
}

/// A jump table being built.
struct Build {
    receiver: Receiver<Option<BuiltJumpTable>>,
    /// In lockstep mode, the tick it is given to its grid at (waiting for it if it is late).
    due: Option<u64>,
}

impl Build {
    /// Starts building the table of `grid`, due at tick `due` in lockstep mode.
    fn start(grid: GridSnapshot, due: Option<u64>) -> Self {
        let (sender, receiver) = crossbeam_channel::bounded(1);
        let work = move || {
            // The receiver is gone only if the build was given up meanwhile.
            let _ = sender.send(grid.build_jump_table_apart());
        };
        build_apart("tilepath jump table", work);
        Build { receiver, due }
    }

    /// The table, if it is to be given to its grid at tick `tick`: as soon as it is done, or in
    /// lockstep mode at its due tick (waiting for it). `Some(None)`: it is done and no table
    /// fitted the grid.
    fn done(&self, tick: u64) -> Option<Option<BuiltJumpTable>> {
        match self.due {
            None => self.receiver.try_recv().ok(),
            Some(due) if tick >= due => self.receiver.recv().ok(),
            Some(_) => None,
        }
    }
}

/// Gives every map's grids where jump point search runs their jump tables (JPS+: the queue's
/// jump point searches read them instead of scanning), built off the main thread (see the
/// module docs) when a map appears, when its classes get grids, and when a grid comes to
/// qualify (one terrain, no penalties); kept up to date by edits from then on. Drops them when
/// the settings turn jump points or tables off.
pub(crate) fn keep_jump_tables(
    settings: Res<TilepathSettings>,
    mut maps: Query<(Entity, &mut NavMap)>,
    mut builds: Local<TableBuilds>,
) {
    let on = settings.search.jump_points && settings.jump_tables;
    let builds = &mut *builds;
    builds.tick += 1;
    let due = settings
        .lockstep
        .as_ref()
        .map(|l| builds.tick + u64::from(l.region_ticks));
    builds.builds.retain(|(map, _), _| maps.contains(*map));
    for (entity, map) in &mut maps {
        // Only a map with a table to start, take or drop is written (a `Mut` taken mutably
        // marks the map changed; nothing in the plugin reacts to that).
        let classes = map.grid_classes();
        let wants = |g: &NavGrid| on && g.jump_points_apply();
        let pending = |class| builds.builds.contains_key(&(entity, class));
        if !classes.iter().any(|&class| {
            let g = map.grid_of(class);
            g.has_jump_table() != wants(g) || pending(class)
        }) {
            continue;
        }
        let map = map.into_inner();
        for class in classes {
            keep_one(map, (entity, class), on, builds, due);
        }
    }
}

/// Keeps the table of `class`'s grid of `map` (see [`keep_jump_tables`]).
fn keep_one(
    map: &mut NavMap,
    key: (Entity, ClassId),
    on: bool,
    builds: &mut TableBuilds,
    due: Option<u64>,
) {
    let grid = map.grid_of(key.1);
    let wants = on && grid.jump_points_apply();
    if !wants {
        builds.builds.remove(&key);
        if grid.has_jump_table() {
            map.drop_jump_table_of(key.1);
        }
        return;
    }
    if grid.has_jump_table() {
        builds.builds.remove(&key);
        return;
    }
    let build = builds
        .builds
        .entry(key)
        .or_insert_with(|| Build::start(map.snapshot_of(key.1), due));
    let Some(done) = build.done(builds.tick) else {
        return;
    };
    builds.builds.remove(&key);
    // A grid that changed its size or rules meanwhile gets a new build next time.
    if let Some(table) = done {
        map.install_jump_table_of(key.1, table);
    }
}
