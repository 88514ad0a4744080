//! Repath on edit: units whose remaining path crosses a cell edited this frame (through
//! [`NavMap::set_terrain`] or [`NavMap::set_walkable`]) search again for the same goal; the rest
//! keep their paths. How far a unit has got is read from the movement plugin's
//! [`PathProgress`] where there is one (the whole path counts otherwise).

use std::collections::HashSet;

use bevy::prelude::*;

use crate::core::Cell;
use crate::plugin::map::NavMap;
use crate::plugin::movement::PathProgress;
use crate::plugin::outcomes::NavPath;
use crate::plugin::request::{PathOrigin, PendingRequests, SubmitInternal};

/// Repaths units whose remaining corridor crosses a changed cell or its neighbours (a unit's body
/// may overlap a neighbour of the corridor cell it walks through).
pub(crate) fn repath_on_change(
    mut maps: Query<(Entity, &mut NavMap)>,
    units: Query<(Entity, &NavPath, Option<&PathProgress>)>,
    book: Res<PendingRequests>,
    mut commands: Commands,
) {
    for (map_entity, mut map) in &mut maps {
        if map.changed_cells().is_empty() {
            continue;
        }
        let near_changed: HashSet<Cell> = map
            .take_changed()
            .into_iter()
            .flat_map(|c| {
                (-1..=1).flat_map(move |dy| (-1..=1).map(move |dx| c + Cell::new(dx, dy)))
            })
            .collect();
        let grid = map.grid();
        for (entity, path, progress) in &units {
            if path.map != map_entity || book.contains(entity) {
                continue;
            }
            // The cells still ahead of the unit's body: its corridor and their neighbours.
            let from = progress.map_or(0, |p| p.cell_index.saturating_sub(1));
            let rest = &path.corridor[from.min(path.corridor.len())..];
            let crosses = rest
                .iter()
                .any(|c| !grid.is_walkable(*c) || near_changed.contains(c));
            if crosses {
                commands.queue(SubmitInternal {
                    entity,
                    request: path.request.clone(),
                    origin: PathOrigin::GridEdit,
                });
            }
        }
    }
}
