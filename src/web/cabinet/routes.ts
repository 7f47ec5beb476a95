/** The cabinet's handlers, gathered for the route table (src/routes.ts). */
export { cabinetRoot, showLogin, postLogin, postLogout, postLogoutAll, postPrefs, accountPage, postTotpStart, postTotpConfirm, postTotpDisable, postPassword } from './login';
export { overview } from './overview';
export { registerPage, registerCsv } from './registers';
export { paymentPage, postRefund, postCancel, postResend } from './payment';
export { shopsPage, postShop, shopPage, postScopes, postAllowlist, postRequireSignature, postSigningSecret, postAcquirer, postRemoveAcquirer, postActivateLive, postPayoutProvider, postRemovePayoutProvider } from './shops';
export { keysPage, postKey, postRevoke } from './keys';
export { webhooksPage, postEndpoint, postRotate, postDeleteEndpoint } from './webhooks';
export { testPage, postAdvance, postReset } from './testmode';
export { auditPage } from './scope';
