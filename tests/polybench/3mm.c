/* 3mm.c: PolyBench/C 4.2 linear-algebra/kernels/3mm, the kernel function as the suite
 * writes it, behind a copy of its header's macros (one dataset chosen with
 * MINI_DATASET, SMALL_DATASET or MEDIUM_DATASET; SMALL when none is). */
#if !defined(MINI_DATASET) && !defined(SMALL_DATASET) && !defined(MEDIUM_DATASET)
# define SMALL_DATASET
#endif

#if !defined(NI) && !defined(NJ) && !defined(NK) && !defined(NL) && !defined(NM)
# ifdef MINI_DATASET
#  define NI 16
#  define NJ 18
#  define NK 20
#  define NL 22
#  define NM 24
# endif
# ifdef SMALL_DATASET
#  define NI 40
#  define NJ 50
#  define NK 60
#  define NL 70
#  define NM 80
# endif
# ifdef MEDIUM_DATASET
#  define NI 180
#  define NJ 190
#  define NK 200
#  define NL 210
#  define NM 220
# endif
#endif

#define _PB_NI POLYBENCH_LOOP_BOUND(NI,ni)
#define _PB_NJ POLYBENCH_LOOP_BOUND(NJ,nj)
#define _PB_NK POLYBENCH_LOOP_BOUND(NK,nk)
#define _PB_NL POLYBENCH_LOOP_BOUND(NL,nl)
#define _PB_NM POLYBENCH_LOOP_BOUND(NM,nm)

#define DATA_TYPE double
#define DATA_PRINTF_MODIFIER "%0.2lf "
#define SCALAR_VAL(x) x
#define SQRT_FUN(x) sqrt(x)
#define EXP_FUN(x) exp(x)
#define POW_FUN(x,y) pow(x,y)

/* polybench.h's defaults: scalar loop bounds, constant-size arrays */
#define POLYBENCH_LOOP_BOUND(x,y) y
#define POLYBENCH_1D(var,dim1,ddim1) var[dim1]
#define POLYBENCH_2D(var,dim1,dim2,ddim1,ddim2) var[dim1][dim2]
#define POLYBENCH_3D(var,dim1,dim2,dim3,ddim1,ddim2,ddim3) var[dim1][dim2][dim3]

static
void kernel_3mm(int ni, int nj, int nk, int nl, int nm,
                DATA_TYPE POLYBENCH_2D(E,NI,NJ,ni,nj),
                DATA_TYPE POLYBENCH_2D(A,NI,NK,ni,nk),
                DATA_TYPE POLYBENCH_2D(B,NK,NJ,nk,nj),
                DATA_TYPE POLYBENCH_2D(F,NJ,NL,nj,nl),
                DATA_TYPE POLYBENCH_2D(C,NJ,NM,nj,nm),
                DATA_TYPE POLYBENCH_2D(D,NM,NL,nm,nl),
                DATA_TYPE POLYBENCH_2D(G,NI,NL,ni,nl))
{
  int i, j, k;

#pragma scop
  /* E := A*B */
  for (i = 0; i < _PB_NI; i++)
    for (j = 0; j < _PB_NJ; j++)
      {
        E[i][j] = SCALAR_VAL(0.0);
        for (k = 0; k < _PB_NK; ++k)
          E[i][j] += A[i][k] * B[k][j];
      }
  /* F := C*D */
  for (i = 0; i < _PB_NJ; i++)
    for (j = 0; j < _PB_NL; j++)
      {
        F[i][j] = SCALAR_VAL(0.0);
        for (k = 0; k < _PB_NM; ++k)
          F[i][j] += C[i][k] * D[k][j];
      }
  /* G := E*F */
  for (i = 0; i < _PB_NI; i++)
    for (j = 0; j < _PB_NL; j++)
      {
        G[i][j] = SCALAR_VAL(0.0);
        for (k = 0; k < _PB_NJ; ++k)
          G[i][j] += E[i][k] * F[k][j];
      }
#pragma endscop

}
