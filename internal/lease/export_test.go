package lease

// RescueLimit is the most jobs one rescue statement takes back.
const RescueLimit = rescueLimit
