export interface RefundRow {
  seq: number;
  id: string;
  payment_id: string;
  merchant_id: string;
  shop_id: string;
  mode: 'test' | 'live';
  amount: number;
  reason: string;
  status: 'pending' | 'succeeded' | 'failed';
  failure_code: string;
  created_at: number;
  completed_at: number | null;
}
