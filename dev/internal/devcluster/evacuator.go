package devcluster

// The evacuator of the dev cluster (`lvms-dev up --evacuator`): the product is installed with the
// kustomize component config/components/evacuator, the Deployment lvms-evacuator running
// `lvms evacuator` from the product image, so the nodes import nothing more.
const (
	// EvacuatorComponent is the kustomize component the product overlay adds.
	EvacuatorComponent = "config/components/evacuator"
	// evacuatorDeployment is the component's Deployment.
	evacuatorDeployment = "lvms-evacuator"
)
