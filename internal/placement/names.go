package placement

// EventInvolvedObjectName is the field selector of core/v1 Events on the name of their object. Tests
// with a fake client index Events under it.
const EventInvolvedObjectName = "involvedObject.name"
