// expect: 7:12 A[i + 3]
// options: --size N=16
// via: callable
// namespace: {"A": ["float64", [16]], "B": ["float64", [16]]}
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i < N; i++)
    B[i] = A[i + 3];
}
