// expect: 5:19 A[i - 2]
// options: --size N=16
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i < N; i++)
    B[i] = A[i] + A[i - 2];
}
