// Package mobility moves a bound claim's volume to another node and evacuates a node: the engine
// behind kubectl lvms move and evacuate, and the evacuator's drain mode (internal/evacuator).
//
// A move copies the volume node to node (a LogicalVolume on the target that copies the old one through
// a read-only image), creates a PV pre-bound to the claim, deletes the claim and creates it again under
// the same name, bound to the new PV, and only then has the old PV and LV deleted. Every step is
// recorded on the old PV, so a move that was interrupted resumes where it stopped (docs/mobility.md).
package mobility
