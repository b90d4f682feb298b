// htmlparser2's streaming parser alone, for a dynamic import: the package's index also carries a
// DOM, its utilities and a feed reader, which a named re-export lets the bundler leave out.
export { Parser } from 'htmlparser2';
