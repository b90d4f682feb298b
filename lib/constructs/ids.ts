// The building blocks in lib/constructs group the stacks' resources by domain, but they are plain
// classes, not Construct nodes: every resource is created directly in the stack it is given (the
// data stack or a stateless one, lib/herald-stack.ts). A grouping construct would add its id to the
// path of everything below it, and so to every logical ID (`Table…` would become `DataTable…`),
// which CloudFormation deploys as new resources replacing the old ones, the table and its keys
// included.

/** `delivery` → `Delivery`: how manifest names become construct ids. */
export const pascal = (name: string): string => name.charAt(0).toUpperCase() + name.slice(1);
