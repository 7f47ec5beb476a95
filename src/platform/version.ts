import pkg from '../../package.json';

/** The version of this build, from package.json. */
export const VERSION: string = pkg.version;
