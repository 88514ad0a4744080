//! Region maps for the hierarchical search of long requests: one per navigation map and unit
//! class (the classes that plan with a player's knowledge under fog of war have none: what they
//! see changes every frame), built on a thread of their own when the map or class appears
//! (a 512 x 512 map takes 0.1-0.5 s; searches are flat until it is ready), brought up to date
//! after edits cluster by cluster ([`RegionMap::update`], under a millisecond for one tile on a
//! 512 x 512 map) and shared with worker searches like the grid's snapshot (copy-on-write).

use std::sync::Arc;

use bevy::platform::collections::HashMap;
use bevy::prelude::*;
use crossbeam_channel::Receiver;

use crate::core::{Cell, NavGrid, RegionMap};
use crate::plugin::background::build_apart;
use crate::plugin::classes::ClassId;
use crate::plugin::map::{GridSnapshot, NavMap};

/// The region maps of the navigation maps, by map and class.
#[derive(Default)]
pub(super) struct Regions {
    pub(super) maps: HashMap<(Entity, ClassId), MapRegions>,
}

/// One navigation map's region map: ready, or being built.
pub(super) struct MapRegions {
    cluster: u32,
    ready: Option<Arc<RegionMap>>,
    building: Option<Receiver<RegionMap>>,
    /// In lockstep mode, the tick from which the one being built is used (waiting for it if it
    /// is late).
    due: Option<u64>,
    /// Cells edited since the snapshot being built from.
    changed: Vec<Cell>,
}

impl MapRegions {
    /// A region map of `class`'s grid of `map` being built from the grid as it is now, used
    /// from tick `due` in lockstep mode.
    fn build(map: &NavMap, class: ClassId, cluster: u32, due: Option<u64>) -> Self {
        MapRegions {
            cluster,
            ready: None,
            building: Some(build_in_background(map.snapshot_of(class), cluster)),
            due,
            changed: Vec::new(),
        }
    }

    /// The region map being built, if it is to be used now: at once when it is done, or in
    /// lockstep mode at its due tick `frame` (waiting for it).
    fn built(&self, frame: u64) -> Option<RegionMap> {
        let building = self.building.as_ref()?;
        match self.due {
            None => building.try_recv().ok(),
            Some(due) if frame >= due => building.recv().ok(),
            Some(_) => None,
        }
    }
}

impl Regions {
    /// The region map of `class`'s grid of `map`, if it is built.
    pub(super) fn ready(&self, map: Entity, class: ClassId) -> Option<&RegionMap> {
        self.maps
            .get(&(map, class))
            .and_then(|m| m.ready.as_deref())
    }

    /// How many region maps are being built (in the background) now.
    pub(super) fn building(&self) -> usize {
        self.maps.values().filter(|m| m.building.is_some()).count()
    }

    /// The region map of `class`'s grid of `map`, if it is ready and current for `grid`.
    pub(super) fn current(
        &self,
        map: Entity,
        class: ClassId,
        grid: &NavGrid,
    ) -> Option<&Arc<RegionMap>> {
        self.maps
            .get(&(map, class))
            .and_then(|m| m.ready.as_ref())
            .filter(|r| r.is_current(grid))
    }
}

/// Builds a region map of `grid` on a thread of its own (see [`build_apart`]).
fn build_in_background(grid: GridSnapshot, cluster: u32) -> Receiver<RegionMap> {
    let (sender, receiver) = crossbeam_channel::bounded(1);
    let work = move || {
        // The receiver is gone only if the map was removed meanwhile.
        let _ = sender.send(RegionMap::build(&grid, cluster));
    };
    build_apart("tilepath region map", work);
    receiver
}

/// Keeps the region map of one map's class grid current (see [`keep_regions`]) at tick
/// `frame`; a build started now is due at `due` (lockstep mode).
pub(super) fn keep_one(
    regions: &mut Regions,
    map: &NavMap,
    key: (Entity, ClassId),
    cluster: u32,
    (frame, due): (u64, Option<u64>),
) {
    let grid = map.grid_of(key.1);
    let entry = regions
        .maps
        .entry(key)
        .or_insert_with(|| MapRegions::build(map, key.1, cluster, due));
    if entry.cluster != cluster {
        *entry = MapRegions::build(map, key.1, cluster, due);
    }
    let changed = map.class_changed_cells(key.1);
    if entry.building.is_some() {
        entry.changed.extend_from_slice(&changed);
        let Some(mut built) = entry.built(frame) else {
            return;
        };
        let changed = std::mem::take(&mut entry.changed);
        if !built.is_current(grid) {
            if changed.is_empty() {
                // Edited without marking the cells: build again.
                *entry = MapRegions::build(map, key.1, cluster, due);
                return;
            }
            built.update(grid, changed);
        }
        entry.building = None;
        entry.ready = Some(Arc::new(built));
    } else if let Some(ready) = entry.ready.as_mut()
        && !ready.is_current(grid)
    {
        if changed.is_empty() {
            // Edited without marking the cells: only a new build knows what changed.
            *entry = MapRegions::build(map, key.1, cluster, due);
        } else {
            Arc::make_mut(ready).update(grid, changed.iter().copied());
        }
    }
}
