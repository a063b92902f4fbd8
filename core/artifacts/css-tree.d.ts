/**
 * css-tree's one-file ES bundle (`css-tree/dist/csstree.esm`, exported by its package.json as `./dist/*`)
 * has the same API as the package's entry; @types/css-tree types only the entry.
 */
declare module "css-tree/dist/csstree.esm" {
  export * from "css-tree";
}
